// The hostile upstream's own HTTP/1.1 request parser: strict, so that anything the gateway frames oddly shows up as an error.

export interface ParsedRequest {
  method: string;
  target: string;
  /** Lower-cased names; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

export type ParseStep = { kind: 'request'; request: ParsedRequest; rest: string } | { kind: 'incomplete' } | { kind: 'error'; reason: string };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Parses the first request of `text` (latin1), if it has arrived whole. */
export function parseRequest(text: string): ParseStep {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd === -1) return text.length > 64 * 1024 ? { kind: 'error', reason: 'head over 64 KiB' } : { kind: 'incomplete' };
  const [requestLine = '', ...lines] = text.slice(0, headEnd).split('\r\n');
  const match = /^([A-Z]+) (\S+) HTTP\/1\.1$/.exec(requestLine);
  if (!match) return { kind: 'error', reason: `bad request line ${JSON.stringify(requestLine.slice(0, 80))}` };
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    if (colon <= 0 || !TOKEN.test(name)) return { kind: 'error', reason: `bad header line ${JSON.stringify(line.slice(0, 80))}` };
    const lower = name.toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
  }
  const rest = text.slice(headEnd + 4);
  const length = headers['content-length'];
  const coding = headers['transfer-encoding'];
  if (length !== undefined && coding !== undefined) return { kind: 'error', reason: 'both Content-Length and Transfer-Encoding' };
  if (coding !== undefined) {
    if (coding.toLowerCase() !== 'chunked') return { kind: 'error', reason: `transfer coding ${coding}` };
    return chunkedBody(match, headers, rest);
  }
  if (length !== undefined && !/^\d+$/.test(length)) return { kind: 'error', reason: `Content-Length ${JSON.stringify(length)}` };
  const size = length === undefined ? 0 : Number(length);
  if (rest.length < size) return { kind: 'incomplete' };
  return { kind: 'request', request: { method: match[1]!, target: match[2]!, headers, body: rest.slice(0, size) }, rest: rest.slice(size) };
}

function chunkedBody(match: RegExpExecArray, headers: Record<string, string>, text: string): ParseStep {
  let body = '';
  let at = 0;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    if (lineEnd === -1) return { kind: 'incomplete' };
    const sizeText = text.slice(at, lineEnd);
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return { kind: 'error', reason: `chunk size ${JSON.stringify(sizeText.slice(0, 20))}` };
    const size = parseInt(sizeText, 16);
    if (size === 0) {
      // No trailers expected from the gateway.
      if (text.length < lineEnd + 4) return { kind: 'incomplete' };
      if (text.slice(lineEnd + 2, lineEnd + 4) !== '\r\n') return { kind: 'error', reason: 'trailer fields' };
      return { kind: 'request', request: { method: match[1]!, target: match[2]!, headers, body }, rest: text.slice(lineEnd + 4) };
    }
    if (text.length < lineEnd + 2 + size + 2) return { kind: 'incomplete' };
    body += text.slice(lineEnd + 2, lineEnd + 2 + size);
    if (text.slice(lineEnd + 2 + size, lineEnd + 4 + size) !== '\r\n') return { kind: 'error', reason: 'chunk not followed by CRLF' };
    at = lineEnd + 4 + size;
  }
}
