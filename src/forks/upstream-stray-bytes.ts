// An HTTP/1.1 upstream connection on which a byte arrives outside an answer is not used again: undici closes one on which a
// stray response or bytes that are not HTTP arrive while it is idle, but its parser (llhttp) skips empty lines between answers,
// so a bare CRLF a backend writes after an answer, or before the next one, would leave the connection in the pool.
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

/**
 * Where a watched connection is: no request on it (`idle`), a request written and its answer's first byte not yet read
 * (`awaiting`), or its answer being read (`reading`). `retire`: a byte came outside an answer; closed once the answer ends.
 */
interface Watched {
  phase: 'idle' | 'awaiting' | 'reading';
  retire: boolean;
  /** The request awaiting its answer is a HEAD: its answer's Content-Length frames no body. */
  head: boolean;
  /** Where the answer being read ends in the connection's bytes (`bytesRead`), when its Content-Length says; else -1. */
  answerEnd: number;
}

/** An HTTP/1.x status line, the only thing an answer starts with: `HTTP/`. */
const STATUS_LINE_FIRST_BYTE = 0x48;

const watched = new WeakMap<Socket, Watched>();
/** The connection each request of undici's was written on (its diagnostics channels name the request, not the socket, at the end). */
const connectionOf = new WeakMap<object, Socket>();
let listening = false;

/**
 * undici's diagnostics channels (a documented interface, docs/api/DiagnosticsChannel.md) say when a request is written on a
 * connection and when its answer has ended or failed; only connections given to `watchStrayBytes` are looked at.
 */
function listenToUndici(): void {
  if (listening) return;
  listening = true;
  subscribe('undici:client:sendHeaders', (message) => {
    const { request, socket } = message as { request: { method?: unknown }; socket: Socket };
    const state = watched.get(socket);
    if (state === undefined) return;
    state.phase = 'awaiting';
    state.head = request.method === 'HEAD';
    connectionOf.set(request, socket);
  });
  const answerOver = (message: unknown): void => {
    const socket = connectionOf.get((message as { request: object }).request);
    const state = socket === undefined ? undefined : watched.get(socket);
    if (socket === undefined || state === undefined) return;
    state.phase = 'idle';
    // Bytes received past the answer's end (read with its last part, and skipped by the parser, or still waiting) are outside it.
    if (state.answerEnd !== -1 && socket.bytesRead > state.answerEnd) state.retire = true;
    state.answerEnd = -1;
    // Bytes already waiting past the answer's end are outside it too. undici reuses a connection a turn of the event loop after
    // its answer ends at the soonest (setImmediate): closed on this turn's ticks, it is never handed another request.
    if (state.retire || socket.readableLength > 0) process.nextTick(retire, socket);
  };
  subscribe('undici:request:trailers', answerOver);
  subscribe('undici:request:error', answerOver);
}

function retire(socket: Socket): void {
  if (!socket.destroyed) socket.destroy();
}

/**
 * Watches an HTTP/1.1 upstream connection from its start: bytes that arrive while no request is on it close it at once, and an
 * answer that does not start with its status line (a CRLF before it) closes it once that answer has ended (the answer itself is
 * read as undici reads it). Relies on undici reading the connection on its `readable` event, in a
 * listener added after this one (so this one sees the bytes first); `test/integration/answer-binding.test.ts` ("bytes on an idle
 * upstream connection", a bare CRLF) fails if that stops. Not for HTTP/2 connections, whose bytes undici's session reads.
 */
export function watchStrayBytes(socket: Socket): void {
  listenToUndici();
  const state: Watched = { phase: 'idle', retire: false, head: false, answerEnd: -1 };
  watched.set(socket, state);
  socket.on('readable', () => {
    if (state.phase === 'reading' || socket.readableLength === 0) return;
    if (state.phase === 'idle') {
      retire(socket);
      return;
    }
    // The answer's first bytes: looked at and put back for undici, which reads them next.
    const first = socket.read() as Buffer | null;
    if (first === null) return;
    socket.unshift(first);
    state.phase = 'reading';
    if (first[0] !== STATUS_LINE_FIRST_BYTE) state.retire = true;
    else if (!state.head) {
      // `bytesRead` counts what the connection received (for TLS, the decrypted bytes): this answer starts at its value less `first`.
      const length = lengthOfAnswer(first);
      if (length !== -1) state.answerEnd = socket.bytesRead - first.length + length;
    }
  });
}

const HEAD_END = Buffer.from('\r\n\r\n');
/** A final status whose answer has a body (1xx, 204 and 304 have none), in the lowercased head. */
const STATUS_WITH_BODY = /^http\/1\.[01] (?!1\d\d|204|304)\d{3}[ \r]/;
const LENGTH_VALUE = /^[ \t]*(\d{1,15})[ \t]*\r\n/;

/**
 * The answer's length in bytes, head and body, when its first read holds its whole head and the head frames the body by one
 * Content-Length; else -1 (a chunked body, whose end the bytes would have to be parsed to find, is left to undici).
 */
function lengthOfAnswer(first: Buffer): number {
  const headEnd = first.indexOf(HEAD_END);
  if (headEnd === -1) return -1;
  const head = first.toString('latin1', 0, headEnd + 2).toLowerCase();
  if (!STATUS_WITH_BODY.test(head.slice(0, 13)) || head.includes('\r\ntransfer-encoding:')) return -1;
  const fields = head.split('\r\ncontent-length:');
  const length = fields.length === 2 ? LENGTH_VALUE.exec(fields[1]!) : null;
  return length === null ? -1 : headEnd + HEAD_END.length + Number(length[1]);
}
