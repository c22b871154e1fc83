// Invariant d on the upstream leg: the upstream parses only requests clients sent whole and valid, each once, and never a key, nor a
// field the request's own Connection named (one it did not name arrives as sent);
// each carries one well-formed traceparent of the gateway's, continuing the client's trace when it sent a valid one;
// an answer with a transfer coding the gateway cannot relay ends its connection and reaches its client as an Error; an answer made
// for another request (its X-Request-Id, or a stray the upstream wrote after the answer before) ends its connection and reaches its
// client as 502 upstream_answer_mismatch, never as the upstream's status or body; a connection on which a CRLF came in the same
// write as an answer carries no request after it.
import { afterStray, mismatched, reach, stallsIn, strayBefore, upstreamPlaces } from './answer-facts.ts';
import type { ClientOutcome } from './client-driver.ts';
import type { UpstreamConnection } from './hostile-upstream.ts';
import { HOP_FIELD_VALUE } from './client-requests.ts';
import { parseReceived } from './response-parser.ts';
import type { EdgeCase, SentRequest } from './script.ts';
import type { Violation } from './violations.ts';

/** The secret part of a key too: a gateway that forwarded only that would leak it as surely. */
function keyForms(key: string): string[] {
  const secret = key.slice(key.lastIndexOf('_') + 1);
  return secret.length >= 16 ? [key, secret] : [key];
}

/** W3C Trace Context version 00, lower-case hex: the only form the gateway writes. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

function traceContextViolation(traceparent: string | undefined, request: SentRequest): string | undefined {
  const parsed = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (parsed === null) return `a traceparent that is not one well-formed value: ${JSON.stringify(traceparent)}`;
  if (/^0+$/.test(parsed[1]!) || /^0+$/.test(parsed[2]!)) return `an all-zero id in traceparent ${traceparent}`;
  if (request.trace === undefined) return undefined;
  if (parsed[1] !== request.trace.traceId) return `traceparent ${traceparent}, not the client's trace ${request.trace.traceId}`;
  if ((parsed[3] === '01') !== request.trace.sampled) return `traceparent ${traceparent}, not the client's sampled flag`;
  return undefined;
}

/**
 * The answers a client received to requests whose upstream answer had a transfer coding other than
 * `chunked` alone (see upstream-generators.ts): each one the client received whole is a 502 Error, or a
 * 504 when the upstream's head was later than the gateway would wait; never the upstream's status or body.
 */
function checkUnrelayableCodings(
  edgeCase: EdgeCase,
  clients: ClientOutcome[],
  received: ReadonlySet<string>,
  flag: (detail: string, client?: number) => void,
): void {
  edgeCase.clients.forEach((script, client) => {
    const outcome = clients[client]!;
    const whole = script.requests.filter((request) => request.end <= outcome.written);
    const stream = parseReceived(outcome.received, (i) => whole[i]?.method === 'HEAD', outcome.end !== 'done');
    stream.responses.forEach((response, i) => {
      const request = whole[i];
      if (request === undefined || !response.complete || !received.has(request.tag)) return;
      if (edgeCase.upstream[request.tag]?.transferCoding === undefined) return;
      const errorShaped = /^application\/json\b/.test(response.headers['content-type'] ?? '') && response.body.includes(`"status":${response.status}`);
      if ((response.status !== 502 && response.status !== 504) || (request.method !== 'HEAD' && !errorShaped))
        flag(
          `the answer to ${request.tag}, whose upstream answer had an unrelayable transfer coding, is ${response.status} ${JSON.stringify(response.body.slice(0, 120))}`,
          client,
        );
    });
  });
}

/** The answers made for another request: each one the client received whole is the 502 upstream_answer_mismatch, none of the upstream's. */
function checkAnswerBinding(
  edgeCase: EdgeCase,
  clients: ClientOutcome[],
  connections: UpstreamConnection[],
  flag: (detail: string, client?: number) => void,
): void {
  const places = upstreamPlaces(connections);
  const stalls = stallsIn(edgeCase);
  const refused = (tag: string) => {
    const behaviour = edgeCase.upstream[tag];
    if (behaviour === undefined || !places.has(tag)) return false;
    if (afterStray(edgeCase, places, tag)) return true;
    return mismatched(edgeCase, behaviour) && reach(behaviour, edgeCase.gateway.timeoutMs).head;
  };
  /** Bytes that are not HTTP before the answer: the gateway cannot read it, and answers with an Error of its own. */
  const garbled = (tag: string) => strayBefore(edgeCase, places, tag) === 'garbage';
  edgeCase.clients.forEach((script, client) => {
    const outcome = clients[client]!;
    const whole = script.requests.filter((request) => request.end <= outcome.written);
    const stream = parseReceived(outcome.received, (i) => whole[i]?.method === 'HEAD', outcome.end !== 'done');
    stream.responses.forEach((response, i) => {
      const request = whole[i];
      if (request === undefined || !response.complete || !refused(request.tag)) return;
      const isMismatch =
        response.status === 502 &&
        (request.method === 'HEAD' ||
          response.body.includes('"code":"upstream_answer_mismatch"') ||
          (garbled(request.tag) && /"status":502/.test(response.body)));
      // Anything queued behind a stall may meet a total timeout first: a gateway Error then, but never the upstream's answer.
      const gatewayError = (response.status === 502 || response.status === 504) && (request.method === 'HEAD' || /"status":50[24]/.test(response.body));
      if (!isMismatch && !(stalls && gatewayError))
        flag(`the answer to ${request.tag}, made for another request, is ${response.status} ${JSON.stringify(response.body.slice(0, 120))}`, client);
    });
  });
  connections.forEach((connection, c) => {
    const at = connection.requests.findIndex((request) => refused(request.headers['x-request-id'] ?? ''));
    if (at !== -1 && at < connection.requests.length - 1)
      flag(`upstream connection ${c} was reused after an answer made for another request (request ${at} of ${connection.requests.length})`);
    // A CRLF in the same write as an answer reaches the gateway with its end: no request may follow that answer there.
    const crlf = connection.requests.findIndex((request) => edgeCase.upstream[request.headers['x-request-id'] ?? '']?.crlfSameWrite === true);
    if (crlf !== -1 && crlf < connection.requests.length - 1)
      flag(`upstream connection ${c} carried request ${crlf + 2} of ${connection.requests.length} after a CRLF written with the answer before it`);
    // Stray bytes reach the gateway before the answer to the next request there, at the latest: none may follow that one.
    const stray = connection.requests.findIndex((request) => strayBefore(edgeCase, places, request.headers['x-request-id'] ?? '') !== undefined);
    if (stray !== -1 && stray < connection.requests.length - 1)
      flag(`upstream connection ${c} carried request ${stray + 1} of ${connection.requests.length} after stray bytes arrived on it`);
  });
}

export function checkUpstream(edgeCase: EdgeCase, clients: ClientOutcome[], connections: UpstreamConnection[], keys: readonly string[]): Violation[] {
  const violations: Violation[] = [];
  const flag = (detail: string, client?: number) => violations.push({ invariant: 'd', ...(client === undefined ? {} : { client }), detail });
  const sent = new Map<string, { client: number; request: SentRequest; whole: boolean }>();
  edgeCase.clients.forEach((script, client) => {
    for (const request of script.requests) sent.set(request.tag, { client, request, whole: request.end <= clients[client]!.written });
  });
  const seen = new Set<string>();

  connections.forEach((connection, c) => {
    // Its framing lost, the connection cannot carry another answer: the gateway closes it, never reuses it.
    const unrelayable = connection.requests.findIndex((request) => edgeCase.upstream[request.headers['x-request-id'] ?? '']?.transferCoding !== undefined);
    if (unrelayable !== -1 && unrelayable < connection.requests.length - 1)
      flag(`upstream connection ${c} was reused after an answer with an unrelayable transfer coding (request ${unrelayable} of ${connection.requests.length})`);
    if (connection.parseError !== undefined) flag(`upstream connection ${c}: bytes the upstream cannot parse (${connection.parseError})`);
    for (const key of keys) {
      for (const form of keyForms(key)) {
        if (connection.raw.includes(form)) flag(`upstream connection ${c} received client ${keys.indexOf(key)}'s API key`);
      }
    }
    for (const received of connection.requests) {
      const tag = received.headers['x-request-id'];
      const what = `${received.method} ${received.target} (X-Request-Id ${tag ?? 'none'})`;
      const origin = tag === undefined ? undefined : sent.get(tag);
      if (origin === undefined) {
        flag(`upstream connection ${c} received ${what}, which no client sent`);
        continue;
      }
      const { request, client } = origin;
      if (!origin.whole) flag(`upstream received ${what}, which client ${client} never finished sending`, client);
      else if (!request.valid) flag(`upstream received ${what}, an invalid request the gateway should have refused`, client);
      // HEAD is served as GET: either method may carry it upstream.
      const methodOk = received.method === request.method || (request.method === 'HEAD' && received.method === 'GET');
      if (!methodOk || received.target !== request.target || received.body !== request.body) {
        flag(
          `upstream received ${what} with body ${JSON.stringify(received.body.slice(0, 80))}; client ${client} sent ${request.method} ${request.target} with ${JSON.stringify(request.body.slice(0, 80))}`,
          client,
        );
      }
      const traceProblem = traceContextViolation(received.headers.traceparent, request);
      if (traceProblem !== undefined) flag(`upstream received ${what} with ${traceProblem}`, client);
      const language = received.headers['accept-language'];
      if (request.hop === 'listed' && language !== undefined) flag(`upstream received ${what} with the Accept-Language its client's Connection named`, client);
      if (request.hop === 'unlisted' && language !== HOP_FIELD_VALUE)
        flag(`upstream received ${what} with Accept-Language ${language ?? '(none)'}, not ${HOP_FIELD_VALUE} as sent`, client);
      if (seen.has(tag!)) flag(`upstream received ${request.tag} more than once`, client);
      seen.add(tag!);
    }
  });
  checkUnrelayableCodings(edgeCase, clients, seen, flag);
  checkAnswerBinding(edgeCase, clients, connections, flag);
  return violations;
}
