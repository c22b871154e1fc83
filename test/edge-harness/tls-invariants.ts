// Invariant g on the TLS leg: no renegotiation, plain HTTP answered in the clear with one 400 and nothing else, no HTTP for a client that never finished a handshake.
import { PLAIN_HTTP_ANSWER } from '../helpers/plain-http-answer.ts';
import type { ClientOutcome } from './client-driver.ts';
import type { EdgeCase } from './script.ts';
import type { Violation } from './violations.ts';

/** A status line anywhere in what a client read: HTTP outside a TLS session, which the listener must never write. */
const STATUS_LINE = /HTTP\/1\.[01] \d{3}/;

/** The first bytes by which the TLS layer tells a plain request line from a record (OpenSSL's list): only these are answered. */
const REQUEST_LINE_OPENINGS = ['GET ', 'POST ', 'HEAD ', 'PUT ', 'PATCH', 'OPTIO', 'DELET', 'TRACE'];

/** Whether a plaintext client's bytes open with a request line the listener answers; `whole`: every piece was written. */
function answerable(script: EdgeCase['clients'][number]): { opens: boolean; whole: boolean } {
  const bytes = script.pieces.map((piece) => piece.bytes).join('');
  return { opens: REQUEST_LINE_OPENINGS.some((opening) => bytes.startsWith(opening)), whole: script.earlyClose === undefined };
}

/**
 * Only the clients hostile to TLS are judged here; what the others received is judged as HTTP (client-invariants.ts) whatever carried
 * it, and a cut handshake's client is not (it reads TLS records in the clear, never a response).
 */
export function checkTls(edgeCase: EdgeCase, clients: readonly ClientOutcome[], progressDeadlineMs: number): Violation[] {
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
      case 'plaintext': {
        // Plain HTTP to the TLS port: a request line is answered PLAIN_HTTP_ANSWER in the clear and the connection closed; any other
        // bytes that are no TLS record are closed without a word. Never a second answer, never an answer forwarded from the upstream.
        const { opens, whole } = answerable(script);
        if (outcome.end === 'hung')
          violations.push({ invariant: 'e', client, detail: `plain HTTP to the TLS port neither answered nor closed within ${progressDeadlineMs} ms` });
        if (outcome.received === '') {
          if (opens && whole) flag('a plain request line sent whole to the TLS port was closed without the 400 in the clear');
        } else if (outcome.received !== PLAIN_HTTP_ANSWER) {
          flag(`plain HTTP sent to the TLS port read something other than the one 400: ${JSON.stringify(outcome.received.slice(0, 160))}`);
        } else if (!opens) {
          flag('bytes that open with no request line were answered in the clear');
        }
        return;
      }
      case 'handshake-cut':
        if (STATUS_LINE.test(outcome.received)) flag(`a client that never finished its handshake read HTTP: ${JSON.stringify(outcome.received.slice(0, 120))}`);
        return;
    }
  });
  return violations;
}
