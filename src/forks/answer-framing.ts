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

const TRANSFER_ENCODING = '\r\ntransfer-encoding:';
const CONTENT_LENGTH = '\r\ncontent-length:';

/**
 * The value of the head's one field `line` names (`\r\n<lowercased name>:`), undefined when absent, null when repeated. Found by
 * `indexOf`, not `split`: every upstream answer passes here, and a split makes an array and its strings each time.
 */
function onlyValue(head: string, line: string): string | undefined | null {
  const at = head.indexOf(line);
  if (at === -1) return undefined;
  const valueStart = at + line.length;
  if (head.indexOf(line, valueStart) !== -1) return null;
  return FIELD_VALUE.exec(head.slice(valueStart))?.[1] ?? null;
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
    const coding = onlyValue(head, TRANSFER_ENCODING);
    const length = onlyValue(head, CONTENT_LENGTH);
    if (coding !== undefined) return coding === 'chunked' && length === undefined ? { kind: 'chunked', bodyStart } : UNKNOWN;
    if (length === undefined || length === null || !/^\d{1,15}$/.test(length)) return UNKNOWN;
    return { kind: 'length', end: bodyStart + Number(length) };
  }
}
