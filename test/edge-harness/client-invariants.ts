// Invariants a, b, c and part of e on the client leg: what each client received, against what it sent whole.
import { HOP_ANSWER_LANGUAGE } from './answer-bytes.ts';
import type { ClientOutcome } from './client-driver.ts';
import { parseReceived, type ReceivedResponse } from './response-parser.ts';
import { PLAIN_ANSWER, TAG_PATTERN, tagOf, type ClientScript, type EdgeCase, type SentRequest } from './script.ts';
import type { Violation } from './violations.ts';

export function isErrorBody(response: ReceivedResponse): boolean {
  if (!/^application\/json\b/.test(response.headers['content-type'] ?? '')) return false;
  try {
    const body = JSON.parse(response.body) as { code?: unknown; message?: unknown; status?: unknown };
    return typeof body.code === 'string' && typeof body.message === 'string' && body.status === response.status;
  } catch {
    return false;
  }
}

export const closesConnection = (response: ReceivedResponse) => /\bclose\b/i.test(response.headers.connection ?? '');

/**
 * Whether a relayed answer to `request` may legitimately be cut (its head relayed, the connection then
 * closed, the only way HTTP/1.1 can say "truncated"): its upstream answer was itself cut or lied long or
 * stalled mid-body, or some answer in the case stalled, so a total timeout may expire mid-body.
 */
function mayBeCut(edgeCase: EdgeCase, request: SentRequest): boolean {
  const behaviour = edgeCase.upstream[request.tag] ?? PLAIN_ANSWER;
  const stalls = Object.values(edgeCase.upstream).some((b) => b.headDelayMs > edgeCase.gateway.timeoutMs || b.bodyDelayMs > edgeCase.gateway.timeoutMs);
  return behaviour.closeMidBody || behaviour.lie === 'longer' || stalls;
}

/**
 * A final refusal in place of the 100 Continue a request waited for (RFC 9110, 10.1.1): the gateway's own Error,
 * naming the request by its X-Request-Id, and the connection closed, since the client may send the body anyway.
 */
function refusedInsteadOfContinue(request: SentRequest | undefined, response: ReceivedResponse): boolean {
  return (
    request?.waitsForContinue === true &&
    response.status >= 400 &&
    isErrorBody(response) &&
    closesConnection(response) &&
    response.headers['x-request-id'] === request.tag
  );
}

/** A refusal of the request tagged `tag` that did not wait for its body: the gateway's Error, and the connection closed. */
function refusedBeforeItsBody(tag: string, response: ReceivedResponse): boolean {
  return response.status >= 400 && isErrorBody(response) && closesConnection(response) && response.headers['x-request-id'] === tag;
}

function snippet(response: ReceivedResponse): string {
  return `${response.status} ${JSON.stringify(response.body.slice(0, 120))}`;
}

export function checkClient(edgeCase: EdgeCase, index: number, outcome: ClientOutcome, progressDeadlineMs: number): Violation[] {
  const script: ClientScript = edgeCase.clients[index]!;
  const violations: Violation[] = [];
  const flag = (invariant: Violation['invariant'], detail: string) => violations.push({ invariant, client: index, detail });
  const whole = script.requests.filter((request) => request.end <= outcome.written);
  // The first request not sent whole may have been refused before its body was invited: answered all the same.
  const invited = script.requests[whole.length];
  const scriptLength = script.pieces.reduce((sum, piece) => sum + piece.bytes.length, 0);
  const garbageSent = script.garbage && outcome.written === scriptLength;
  // A client that closed its side (close_notify, or a FIN) with a request begun: its bytes end short of one, as garbage would.
  const leftMidRequest =
    script.earlyClose?.how === 'close-notify' && outcome.end === 'client-closed' && script.requests.every((r) => r.end !== outcome.written);
  // The request a client that leaves early was partway through (one it leaves on purpose is never in `requests`): its head may have
  // arrived whole, and been refused before its body, which the client reads when it leaves late or only closes its side.
  const partialTag = script.earlyClose === undefined ? undefined : (script.requests[whole.length]?.tag ?? tagOf(index, script.requests.length));
  const closed = outcome.end !== 'done';
  const stream = parseReceived(outcome.received, (i) => script.requests[i]?.method === 'HEAD', closed);
  const ownerOf = new Map(edgeCase.clients.flatMap((client, c) => client.requests.map((request) => [request.tag, c] as const)));

  stream.responses.forEach((response, i) => {
    const request = whole[i] ?? (i === whole.length && refusedInsteadOfContinue(invited, response) ? invited : undefined);
    if (request === undefined && i === whole.length && partialTag !== undefined && refusedBeforeItsBody(partialTag, response)) return;
    if (response.status === 500) flag('e', `answer #${i} is a 500: ${snippet(response)}`);
    if (response.status === 101) flag('b', `answer #${i} is a 101 to a request that asked for no upgrade`);
    for (const [tag] of response.body.matchAll(TAG_PATTERN)) {
      if (tag === request?.tag) continue;
      const owner = ownerOf.get(tag);
      if (owner !== undefined && owner !== index)
        flag('a', `answer #${i}${request ? ` to ${request.tag}` : ''} carries ${tag}, client ${owner}'s: ${snippet(response)}`);
      else flag('b', `answer #${i}${request ? ` to ${request.tag}` : ''} carries ${tag}, another of its own requests: ${snippet(response)}`);
    }
    if (request === undefined) {
      // One final 400 that closes the connection may answer bytes that did not parse, after every complete request.
      const finalRefusal =
        (garbageSent || leftMidRequest) &&
        i === whole.length &&
        i === stream.responses.length - 1 &&
        response.status === 400 &&
        closesConnection(response) &&
        isErrorBody(response);
      if (!finalRefusal) flag('b', `answer #${i} answers no request (${whole.length} sent whole): ${snippet(response)}`);
      return;
    }
    if (!response.complete) {
      // The client's own close (or the hang detector's) cuts whatever was arriving: not the gateway's doing.
      const cutByClient = outcome.end === 'client-closed' || outcome.end === 'hung';
      if (!cutByClient && !(closed && i === stream.responses.length - 1 && mayBeCut(edgeCase, request)))
        flag('c', `the answer to ${request.tag} was cut: ${snippet(response)}`);
      return;
    }
    // Every answer the pipeline gives, the gateway's refusals included, tells a page of the allowed origin it may read it, and no other.
    const allowOrigin = response.headers['access-control-allow-origin'];
    if (allowOrigin !== request.allowOrigin)
      flag(
        'c',
        `the ${response.status} answer to ${request.tag} says Access-Control-Allow-Origin ${allowOrigin ?? '(none)'}, not ${request.allowOrigin ?? '(none)'}`,
      );
    // A field the upstream answer's own Connection named is never relayed; one it did not name is, on the upstream's own success.
    const { hopField, status: upstreamStatus } = edgeCase.upstream[request.tag] ?? {};
    const language = response.headers['content-language'];
    if (hopField === 'listed' && language !== undefined)
      flag('c', `the ${response.status} answer to ${request.tag} carries the Content-Language its upstream answer's Connection named`);
    if (
      hopField === 'unlisted' &&
      request.method !== 'OPTIONS' &&
      response.status === upstreamStatus &&
      response.status < 300 &&
      language !== HOP_ANSWER_LANGUAGE
    )
      flag('c', `the ${response.status} answer to ${request.tag} says Content-Language ${language ?? '(none)'}, not the upstream's ${HOP_ANSWER_LANGUAGE}`);
    const tagged = response.body.includes(request.tag);
    const bodiless = request.method === 'HEAD' || response.status === 204 || response.status === 304;
    if (bodiless) return;
    if (response.status < 400 && !tagged) flag('a', `the ${response.status} answer to ${request.tag} does not carry its tag: ${snippet(response)}`);
    if (response.status >= 400 && !tagged && !isErrorBody(response)) flag('c', `the refusal of ${request.tag} has no Error body: ${snippet(response)}`);
  });
  if (stream.stray !== '')
    flag('b', `bytes that begin no response after answer #${stream.responses.length - 1}: ${JSON.stringify(stream.stray.slice(0, 120))}`);

  if (outcome.end === 'hung') flag('e', `neither answered nor closed within ${progressDeadlineMs} ms, waiting for ${outcome.hungWaiting}`);
  if (outcome.end === 'server-closed') {
    const answered = stream.responses.filter((response) => response.complete).length;
    const next = whole[answered];
    const cut = stream.responses[answered];
    // A request that asked for 100 Continue, refused before its body: the gateway closes, since it cannot tell whether the body follows.
    const last = stream.responses[answered - 1];
    const refusedExpecting =
      whole[answered - 1]?.expectsContinue === true && last !== undefined && last.status >= 400 && isErrorBody(last) && closesConnection(last);
    if (next !== undefined && !refusedExpecting && !(cut !== undefined && !cut.complete && mayBeCut(edgeCase, next))) {
      flag('c', `${next.tag} (${next.method} ${next.target}) got no answer before the gateway closed the connection (${answered} of ${whole.length} answered)`);
    }
  }
  return violations;
}
