// The invariant checker: every violation a case's observation shows, client leg, upstream leg, the answers' contract check and the gateway's own state.
import { checkClient } from './client-invariants.ts';
import { checkContract } from './contract-invariants.ts';
import { checkAgainstTwin } from './twin-invariants.ts';
import { checkUpstream } from './upstream-invariants.ts';
import type { CaseObservation, Violation } from './violations.ts';

export function checkInvariants(observed: CaseObservation, progressDeadlineMs: number): Violation[] {
  const { edgeCase } = observed;
  return [
    ...observed.clients.flatMap((outcome, index) => checkClient(edgeCase, index, outcome, progressDeadlineMs)),
    ...checkUpstream(edgeCase, observed.clients, observed.upstream, observed.keys),
    ...checkContract(edgeCase, observed.clients, observed.upstream, observed.rests),
    ...checkAgainstTwin(edgeCase, observed.clients, observed.upstream, observed.twin),
    ...(observed.inFlightAfter === undefined
      ? [{ invariant: 'e' as const, detail: 'the in-flight gauge could not be read after the case' }]
      : observed.inFlightAfter !== 0
        ? [{ invariant: 'e' as const, detail: `${observed.inFlightAfter} request(s) still in flight after every client was done` }]
        : []),
    ...observed.crashes.map((crash) => ({ invariant: 'e' as const, detail: `crash: ${crash}` })),
    ...observed.unexpected.map((line) => ({ invariant: 'e' as const, detail: `logged: ${line.slice(0, 300)}` })),
  ];
}
