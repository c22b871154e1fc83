// Splits what a client received into responses, framed as HTTP/1.1 frames them (a HEAD's answer has no body), interim ones counted apart.

export interface ReceivedResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** Its body arrived whole (a response read to the connection's close is whole once it closed). */
  complete: boolean;
}

export interface ReceivedStream {
  /** Final (non-1xx, and 101) responses in order. */
  responses: ReceivedResponse[];
  /** `100 Continue` answers seen. */
  continues: number;
  /** Bytes after the last response that do not begin one. */
  stray: string;
}

/**
 * `bodiless(i)` says whether the i-th final response answers a HEAD. `closed`: the connection ended,
 * so a response framed by the close is whole.
 */
export function parseReceived(text: string, bodiless: (index: number) => boolean, closed: boolean): ReceivedStream {
  const responses: ReceivedResponse[] = [];
  let continues = 0;
  let at = 0;
  while (at < text.length) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (!text.startsWith('HTTP/1.1 ', at) || headEnd === -1) break;
    const [statusLine = '', ...lines] = text.slice(at, headEnd).split('\r\n');
    const status = Number(statusLine.slice(9, 12));
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    at = headEnd + 4;
    if (status >= 100 && status < 200 && status !== 101) {
      if (status === 100) continues++;
      continue;
    }
    if (bodiless(responses.length) || status === 204 || status === 304 || status === 101) {
      responses.push({ status, headers, body: '', complete: true });
      continue;
    }
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const { body, end } = readChunks(text, at);
      responses.push({ status, headers, body, complete: end !== -1 });
      if (end === -1) return { responses, continues, stray: '' };
      at = end;
      continue;
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      const body = text.slice(at, at + length);
      responses.push({ status, headers, body, complete: body.length === length });
      at += body.length;
      continue;
    }
    responses.push({ status, headers, body: text.slice(at), complete: closed });
    return { responses, continues, stray: '' };
  }
  return { responses, continues, stray: text.slice(at) };
}

function readChunks(text: string, start: number): { body: string; end: number } {
  let body = '';
  let at = start;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    if (lineEnd === -1) return { body, end: -1 };
    const size = parseInt(text.slice(at, lineEnd), 16);
    if (Number.isNaN(size)) return { body, end: -1 };
    if (size === 0) {
      const trailerEnd = text.indexOf('\r\n\r\n', lineEnd);
      return { body, end: trailerEnd === -1 ? -1 : trailerEnd + 4 };
    }
    if (text.length < lineEnd + 2 + size + 2) return { body: body + text.slice(lineEnd + 2, lineEnd + 2 + size), end: -1 };
    body += text.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 4 + size;
  }
}

/** Final responses whose bodies arrived whole, counted from the start. */
export function completeFinals(stream: ReceivedStream): number {
  const incomplete = stream.responses.findIndex((response) => !response.complete);
  return incomplete === -1 ? stream.responses.length : incomplete;
}
