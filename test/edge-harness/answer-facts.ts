// What the harness knows of an upstream answer from its generated behaviour alone: how far it got, where it went, in words.
import type { UpstreamConnection } from './hostile-upstream.ts';
import type { EdgeCase, StrayKind, UpstreamBehaviour } from './script.ts';

/**
 * How far the upstream's answer got, as generated: whether the gateway can have its head, and its whole body. An interim answer
 * the request did not ask for (100, 103) may be refused by the gateway's HTTP client as no response at all (502 bad_gateway).
 */
export function reach(behaviour: UpstreamBehaviour, timeoutMs: number): { head: boolean; body: boolean } {
  const head = behaviour.headDelayMs <= timeoutMs && !behaviour.upgrade && behaviour.transferCoding === undefined && behaviour.interim.length === 0;
  return { head, body: head && !behaviour.closeMidBody && behaviour.lie !== 'longer' && behaviour.bodyDelayMs <= timeoutMs };
}

/** Any stall lets a total timeout expire for answers queued behind it: a gateway Error may then stand in for any answer. */
export function stallsIn(edgeCase: EdgeCase): boolean {
  const { timeoutMs } = edgeCase.gateway;
  return Object.values(edgeCase.upstream).some((b) => b.headDelayMs > timeoutMs || b.bodyDelayMs > timeoutMs);
}

/** Where each tag the upstream received went: its connection, whether a later request followed it there, and the one before it. */
export function upstreamPlaces(connections: readonly UpstreamConnection[]): Map<string, { connection: number; followed: boolean; previous?: string }> {
  const places = new Map<string, { connection: number; followed: boolean; previous?: string }>();
  connections.forEach((connection, c) => {
    connection.requests.forEach((request, r) => {
      const tag = request.headers['x-request-id'];
      const previous = r > 0 ? connection.requests[r - 1]!.headers['x-request-id'] : undefined;
      if (tag !== undefined) places.set(tag, { connection: c, followed: r < connection.requests.length - 1, ...(previous === undefined ? {} : { previous }) });
    });
  });
  return places;
}

/**
 * Whether the gateway must refuse the answer written for `behaviour` as made for another request (502 upstream_answer_mismatch):
 * under `required`, any answer not echoing the id; otherwise one carrying another request's.
 */
export function mismatched(edgeCase: EdgeCase, behaviour: UpstreamBehaviour): boolean {
  if (edgeCase.gateway.requestIdEcho === 'off') return false;
  const id = behaviour.answerId ?? 'missing';
  return edgeCase.gateway.requestIdEcho === 'required' ? id !== 'echo' : id === 'wrong';
}

/** The stray bytes the upstream wrote after the answer before the request tagged `tag` on its connection, when it wrote any. */
export function strayBefore(edgeCase: EdgeCase, places: ReturnType<typeof upstreamPlaces>, tag: string): StrayKind | undefined {
  const previous = places.get(tag)?.previous;
  const before = previous === undefined ? undefined : edgeCase.upstream[previous];
  return before?.strayAfter === true ? (before.strayKind ?? 'response') : undefined;
}

/**
 * Whether the request tagged `tag` followed, on its upstream connection, an answer after which the upstream wrote a stray response
 * or bytes that are not HTTP: its answer is then refused (the stray read in its place, or a parse that fails). A bare CRLF is not:
 * the gateway's parser skips it and reads the request's own answer.
 */
export function afterStray(edgeCase: EdgeCase, places: ReturnType<typeof upstreamPlaces>, tag: string): boolean {
  const kind = strayBefore(edgeCase, places, tag);
  return kind !== undefined && kind !== 'crlf';
}

/** The behaviour in a few words, for a violation's message. */
export function describe(behaviour: UpstreamBehaviour): string {
  const parts = [`${behaviour.status}`, behaviour.contract ?? 'contract unknown', ...(behaviour.offContract ? [behaviour.offContract] : [])];
  if (behaviour.headDelayMs > 0) parts.push(`head after ${behaviour.headDelayMs} ms`);
  if (behaviour.bodyDelayMs > 0) parts.push(`body after ${behaviour.bodyDelayMs} ms`);
  if (behaviour.closeMidBody) parts.push('cut mid-body');
  if (behaviour.lie !== 'none') parts.push(`Content-Length ${behaviour.lie}`);
  if (behaviour.framing === 'chunked') parts.push('chunked');
  if (behaviour.answerId !== undefined && behaviour.answerId !== 'echo') parts.push(`X-Request-Id ${behaviour.answerId}`);
  if (behaviour.trailers === true && behaviour.framing === 'chunked') parts.push('trailers');
  if (behaviour.crlfSameWrite === true) parts.push('a CRLF in the same write after it');
  if (behaviour.strayAfter === true) parts.push(`stray bytes after it (${behaviour.strayKind ?? 'response'})`);
  if (behaviour.trickleMs !== undefined) parts.push(`slow body, rest after the client has its first part or ${behaviour.trickleMs} ms`);
  return parts.join(', ');
}
