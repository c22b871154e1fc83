// Invariant f against the off twin: what checking answers (report, enforce) changed in an answer the client got.
import { afterStray, describe, reach, stallsIn, upstreamPlaces } from './answer-facts.ts';
import type { ClientOutcome } from './client-driver.ts';
import type { UpstreamConnection } from './hostile-upstream.ts';
import { parseReceived, type ReceivedResponse } from './response-parser.ts';
import { type EdgeCase, PLAIN_ANSWER } from './script.ts';
import type { CaseObservation, Violation } from './violations.ts';

/**
 * The rate-limit counters live in the run's Redis, which the twin shares: what is left differs by the other gateway's requests,
 * and the seconds to the window's end by when it asked: in every policy the field lists (a key with a quota has two). The policies'
 * names must still match.
 */
const normalize = (name: string, value: string) => (name === 'ratelimit' ? value.replace(/; r=\d+; t=\d+/g, '; r=_; t=_') : value);

/** The first difference between two answers' heads and bodies, Date aside; undefined when there is none. */
function difference(answer: ReceivedResponse, twin: ReceivedResponse): string | undefined {
  if (answer.status !== twin.status) return `status ${answer.status}, off's ${twin.status}`;
  const names = new Set([...Object.keys(answer.headers), ...Object.keys(twin.headers)]);
  names.delete('date');
  for (const name of [...names].sort()) {
    const [ours, theirs] = [answer.headers[name], twin.headers[name]];
    if (ours === undefined || theirs === undefined || normalize(name, ours) !== normalize(name, theirs))
      return `${name}: ${ours ?? '(none)'}, off's ${theirs ?? '(none)'}`;
  }
  if (answer.body !== twin.body) return `body ${JSON.stringify(answer.body.slice(0, 120))}, off's ${JSON.stringify(twin.body.slice(0, 120))}`;
  return undefined;
}

/**
 * report (every answer) and enforce (answers on the document): the client's answer is the one the off twin's client got for the
 * same request, status, headers but Date, body. Compared where both are deterministic: both whole, the upstream's answer whole
 * and truly framed, nothing in the case to time anything out, the request reached both upstreams, and in both or in neither
 * did it follow, on its upstream connection, an answer after which the upstream wrote stray bytes. The upstream writes those
 * when the next request arrives there or after `lateMs`: whether a gateway sent one there first (its answer then refused, as
 * another request's or unreadable) or the stray closed the idle connection first (the request then sent on a new one) is each
 * gateway's own timing, not what checking answers changed.
 */
export function checkAgainstTwin(
  edgeCase: EdgeCase,
  clients: readonly ClientOutcome[],
  connections: readonly UpstreamConnection[],
  twin: CaseObservation['twin'],
): Violation[] {
  const mode = edgeCase.gateway.contractMode;
  if (twin === undefined || stallsIn(edgeCase) || mode === undefined || mode === 'off') return [];
  const places = upstreamPlaces(connections);
  const twinPlaces = upstreamPlaces(twin.upstream);
  const violations: Violation[] = [];
  edgeCase.clients.forEach((script, client) => {
    const bodiless = (i: number) => script.requests[i]?.method === 'HEAD';
    const [ours, theirs] = [clients[client]!, twin.clients[client]!];
    const ourStream = parseReceived(ours.received, bodiless, ours.end !== 'done').responses;
    const twinStream = parseReceived(theirs.received, bodiless, theirs.end !== 'done').responses;
    script.requests.forEach((request, i) => {
      if (request.end > Math.min(ours.written, theirs.written) || !places.has(request.tag) || !twinPlaces.has(request.tag)) return;
      if (afterStray(edgeCase, places, request.tag) !== afterStray(edgeCase, twinPlaces, request.tag)) return;
      const [answer, twinAnswer] = [ourStream[i], twinStream[i]];
      if (answer === undefined || twinAnswer === undefined || !answer.complete || !twinAnswer.complete) return;
      const behaviour = edgeCase.upstream[request.tag] ?? PLAIN_ANSWER;
      if (!reach(behaviour, edgeCase.gateway.timeoutMs).body || behaviour.lie !== 'none') return;
      if (mode === 'enforce' && behaviour.contract !== 'on') return;
      const differs = difference(answer, twinAnswer);
      if (differs !== undefined)
        violations.push({ invariant: 'f', client, detail: `${mode}: the answer to ${request.tag} (${describe(behaviour)}) is not off's: ${differs}` });
    });
  });
  return violations;
}
