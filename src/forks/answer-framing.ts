// How an HTTP/1.1 answer's end is found, from the first bytes of it a connection received: the head's framing fields.

/**
 * `length`: the answer (interim answers before it included) ends `end` bytes into the first read; `chunked`: its chunked body
 * starts `bodyStart` bytes in; `unknown`: the first read holds no whole final head, or the head frames its body otherwise (to the
 * close, several or contradicting fields) or has no body (204, 304), which leaves the end to undici.
 */
export type AnswerFraming = { kind: 'length'; end: number } | { kind: 'chunked'; bodyStart: number } | { kind: 'unknown' };

const UNKNOWN: AnswerFraming = { kind: 'unknown' };
const HEAD_END = Buffer.from('\r\n\r\n');
const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;
const isBlank = (code: number): boolean => code === 0x20 || code === 0x09;

/**
 * The status of a lowercased head's status line (`http/1.0` or `http/1.1`, a space, three digits, a space or the line's end),
 * 0 when it is not one; an interim one (1xx but 101, which ends the exchange) is followed by another head. Read by character
 * codes: every upstream answer passes here, and a regular expression's test has a fixed cost several times this.
 */
function statusOf(head: string): number {
  if (!head.startsWith('http/1.') || (head.charCodeAt(7) !== 0x30 && head.charCodeAt(7) !== 0x31) || head.charCodeAt(8) !== 0x20) return 0;
  const hundreds = head.charCodeAt(9);
  const tens = head.charCodeAt(10);
  const units = head.charCodeAt(11);
  const after = head.charCodeAt(12);
  if (!isDigit(hundreds) || !isDigit(tens) || !isDigit(units) || (after !== 0x20 && after !== 0x0d)) return 0;
  return (hundreds - 0x30) * 100 + (tens - 0x30) * 10 + (units - 0x30);
}

/** Whether a field value is 1 to 15 decimal digits: a length the gateway takes (beyond, it is left to undici). */
function isLengthDigits(value: string): boolean {
  if (value.length === 0 || value.length > 15) return false;
  for (let at = 0; at < value.length; at++) if (!isDigit(value.charCodeAt(at))) return false;
  return true;
}

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
  // The value runs to the line's end, a CR that must be followed by LF, without the blanks around it.
  const lineEnd = head.indexOf('\r', valueStart);
  if (lineEnd === -1 || head.charCodeAt(lineEnd + 1) !== 0x0a) return null;
  let start = valueStart;
  let end = lineEnd;
  while (start < end && isBlank(head.charCodeAt(start))) start++;
  while (end > start && isBlank(head.charCodeAt(end - 1))) end--;
  return head.slice(start, end);
}

/** The framing of the answer whose first bytes are `first` (starting with its status line), for a request that was not a HEAD. */
export function answerFraming(first: Buffer): AnswerFraming {
  let start = 0;
  for (;;) {
    const headEnd = first.indexOf(HEAD_END, start);
    if (headEnd === -1) return UNKNOWN;
    const bodyStart = headEnd + HEAD_END.length;
    const head = first.toString('latin1', start, headEnd + 2).toLowerCase();
    const status = statusOf(head);
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
    if (length === undefined || length === null || !isLengthDigits(length)) return UNKNOWN;
    return { kind: 'length', end: bodyStart + Number(length) };
  }
}
