// The invariant checker: every violation a case's observation shows, client leg (and its TLS), upstream leg, the answers' contract check and the gateway's own state.
import { checkClient } from './client-invariants.ts';
import { checkContract } from './contract-invariants.ts';
import { checkTls } from './tls-invariants.ts';
import { checkAgainstTwin } from './twin-invariants.ts';
import { checkUpstream } from './upstream-invariants.ts';
import type { CaseObservation, Violation } from './violations.ts';

export function checkInvariants(observed: CaseObservation, progressDeadlineMs: number): Violation[] {
  const { edgeCase } = observed;
  return [
    // A cut handshake's client read TLS records, never a response: the TLS check alone judges it.
    ...observed.clients.flatMap((outcome, index) =>
      edgeCase.clients[index]!.tls?.kind === 'handshake-cut' ? [] : checkClient(edgeCase, index, outcome, progressDeadlineMs),
    ),
    ...checkTls(edgeCase, observed.clients),
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
