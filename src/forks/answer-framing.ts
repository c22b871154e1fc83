// How an HTTP/1.1 answer's end is found, from the first bytes of it a connection received: the head's framing fields.

/**
 * `length`: the answer (interim answers before it included) ends `end` bytes into the first read; `chunked`: its chunked body
 * starts `bodyStart` bytes in; `unknown`: the first read holds no whole final head, or the head frames its body otherwise (to the
 * close, several or contradicting fields) or has no body (204, 304), which leaves the end to undici.
 */
export type AnswerFraming = { kind: 'length'; end: number } | { kind: 'chunked'; bodyStart: number } | { kind: 'unknown' };

const UNKNOWN: AnswerFraming = { kind: 'unknown' };
const HEAD_END = Buffer.from('\r\n\r\n');
/** The status of a lowercased head's status line; an interim one (1xx but 101, which ends the exchange) is followed by another head. */
const STATUS = /^http\/1\.[01] (\d{3})[ \r]/;
const FIELD_VALUE = /^[ \t]*([^\r]*?)[ \t]*\r\n/;

/** The value of the head's one field `name` (lowercased, with its line's `\r\n` before it), undefined when absent, null when repeated. */
function onlyValue(head: string, name: string): string | undefined | null {
  const parts = head.split(`\r\n${name}:`);
  if (parts.length === 1) return undefined;
  return parts.length === 2 ? (FIELD_VALUE.exec(parts[1]!)?.[1] ?? null) : null;
}

/** The framing of the answer whose first bytes are `first` (starting with its status line), for a request that was not a HEAD. */
export function answerFraming(first: Buffer): AnswerFraming {
  let start = 0;
  for (;;) {
    const headEnd = first.indexOf(HEAD_END, start);
    if (headEnd === -1) return UNKNOWN;
    const bodyStart = headEnd + HEAD_END.length;
    const head = first.toString('latin1', start, headEnd + 2).toLowerCase();
    const status = Number(STATUS.exec(head.slice(0, 13))?.[1] ?? 0);
    if (status === 0 || status === 101) return UNKNOWN;
    if (status < 200) {
      start = bodyStart;
      continue;
    }
    // The relay closes a 204's or 304's connection at its head (src/proxy/relay-handler.ts): whatever follows is never read.
    if (status === 204 || status === 304) return UNKNOWN;
    const coding = onlyValue(head, 'transfer-encoding');
    const length = onlyValue(head, 'content-length');
    if (coding !== undefined) return coding === 'chunked' && length === undefined ? { kind: 'chunked', bodyStart } : UNKNOWN;
    if (length === undefined || length === null || !/^\d{1,15}$/.test(length)) return UNKNOWN;
    return { kind: 'length', end: bodyStart + Number(length) };
  }
}
