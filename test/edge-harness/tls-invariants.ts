// Invariant g on the TLS leg: no renegotiation, nothing answered in the clear, no HTTP for a client that never finished a handshake.
import type { ClientOutcome } from './client-driver.ts';
import type { EdgeCase } from './script.ts';
import type { Violation } from './violations.ts';

/** A status line anywhere in what a client read: HTTP outside a TLS session, which the listener must never write. */
const STATUS_LINE = /HTTP\/1\.[01] \d{3}/;

/**
 * Only the clients hostile to TLS are judged here; what the others received is judged as HTTP (client-invariants.ts) whatever carried
 * it, and a cut handshake's client is not (it reads TLS records in the clear, never a response).
 */
export function checkTls(edgeCase: EdgeCase, clients: readonly ClientOutcome[]): Violation[] {
  const violations: Violation[] = [];
  edgeCase.clients.forEach((script, client) => {
    const outcome = clients[client]!;
    const flag = (detail: string) => violations.push({ invariant: 'g', client, detail });
    switch (script.tls?.kind) {
      case undefined:
        return;
      case 'renegotiate':
        // Refused (an alert, or a close) or never asked: the listener's policy is no renegotiation, TLS 1.2 included.
        if (outcome.renegotiation?.result === 'accepted') flag('the listener went through with a TLS 1.2 renegotiation the client asked for');
        return;
      case 'plaintext':
        // Node's HTTPS listener closes a connection whose first bytes are no TLS record, without a word: a status line would be a leak.
        if (STATUS_LINE.test(outcome.received))
          flag(`plain HTTP sent to the TLS port was answered in the clear: ${JSON.stringify(outcome.received.slice(0, 120))}`);
        return;
      case 'handshake-cut':
        if (STATUS_LINE.test(outcome.received)) flag(`a client that never finished its handshake read HTTP: ${JSON.stringify(outcome.received.slice(0, 120))}`);
        return;
    }
  });
  return violations;
}
