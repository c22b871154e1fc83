// The invariant checker: every violation a case's observation shows, client leg (and its TLS), upstream leg, the answers' contract check and the gateway's own state.
import { checkClient } from './client-invariants.ts';
import { checkContract } from './contract-invariants.ts';
import { checkTls } from './tls-invariants.ts';
import { checkAgainstTwin } from './twin-invariants.ts';
import { checkUpstream } from './upstream-invariants.ts';
import type { CaseObservation, Violation } from './violations.ts';

const JUDGED_BY_TLS_ALONE: ReadonlySet<string | undefined> = new Set(['handshake-cut', 'plaintext']);

export function checkInvariants(observed: CaseObservation, progressDeadlineMs: number): Violation[] {
  const { edgeCase } = observed;
  return [
    // A cut handshake's client read TLS records, never a response, and a plaintext one at most the one 400 in the clear, which
    // answers no request it sent (none reached the HTTP parser): the TLS check alone judges them.
    ...observed.clients.flatMap((outcome, index) =>
      JUDGED_BY_TLS_ALONE.has(edgeCase.clients[index]!.tls?.kind) ? [] : checkClient(edgeCase, index, outcome, progressDeadlineMs),
    ),
    ...checkTls(edgeCase, observed.clients, progressDeadlineMs),
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
