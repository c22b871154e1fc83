// An HTTP/1.1 upstream connection on which a byte arrives outside an answer is not used again: undici closes one on which a
// stray response or bytes that are not HTTP arrive while it is idle, but its parser (llhttp) skips empty lines between answers,
// so a bare CRLF a backend writes after an answer, or before the next one, would leave the connection in the pool.
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { CHUNKED_END_LOST, CHUNKED_END_NOT_YET, ChunkedEnd } from './chunked-end.ts';
import { answerFraming } from './answer-framing.ts';

/**
 * Why the watch closed a connection: bytes while no request was on it (`idle_bytes`), bytes past its answer's end
 * (`bytes_after_answer`), or an answer that did not start with its status line (`answer_not_status_line`, a CRLF before it).
 */
export const RETIRE_REASONS = ['idle_bytes', 'bytes_after_answer', 'answer_not_status_line'] as const;
export type RetireReason = (typeof RETIRE_REASONS)[number];

/** Told each connection the watch closes, and why (the metrics count it; the watch imports nothing of the gateway's). */
export type OnRetired = (reason: RetireReason) => void;

/**
 * Where a watched connection is: no request on it (`idle`), a request written and its answer's first byte not yet read
 * (`awaiting`), or its answer being read (`reading`). `retire`: why the connection closes once the answer ends, when it does.
 */
interface Watched {
  phase: 'idle' | 'awaiting' | 'reading';
  retire: RetireReason | undefined;
  /** The request awaiting its answer is a HEAD: its answer's Content-Length frames no body. */
  head: boolean;
  /** Where the answer being read ends in the connection's bytes (`bytesRead`), once its framing says; else -1. */
  answerEnd: number;
  /** A chunked answer whose end is not found yet: the reader of its framing, and how far into `bytesRead` it has read. */
  chunked: ChunkedEnd | undefined;
  scanned: number;
  onRetired: OnRetired | undefined;
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
    if (state.answerEnd !== -1 && socket.bytesRead > state.answerEnd) state.retire ??= 'bytes_after_answer';
    state.answerEnd = -1;
    state.chunked = undefined;
    // Bytes already waiting past the answer's end are outside it too. undici reuses a connection a turn of the event loop after
    // its answer ends at the soonest (setImmediate): closed on this turn's ticks, it is never handed another request.
    if (state.retire === undefined && socket.readableLength > 0) state.retire = 'bytes_after_answer';
    if (state.retire !== undefined) process.nextTick(retire, socket, state, state.retire);
  };
  subscribe('undici:request:trailers', answerOver);
  subscribe('undici:request:error', answerOver);
}

/** Closes the connection (once), telling `onRetired` why. A connection undici already closed (a failed answer) is not counted. */
function retire(socket: Socket, state: Watched, reason: RetireReason): void {
  if (socket.destroyed) return;
  socket.destroy();
  state.onRetired?.(reason);
}

/**
 * Watches an HTTP/1.1 upstream connection from its start: bytes that arrive while no request is on it close it at once, and an
 * answer that does not start with its status line (a CRLF before it), or is followed by bytes past its end (a `Content-Length`'s,
 * a `chunked` body's last chunk and trailers, the head of a 204 or 304), closes it once that answer has ended (the answer itself
 * is read as undici reads it). Relies on undici reading the connection on its `readable` event, in a listener added after this
 * one (so this one sees the bytes first); `test/integration/answer-binding.test.ts` ("bytes on an idle upstream connection", a
 * bare CRLF; "a chunked answer, then a CRLF in the same write") fails if that stops. Not for HTTP/2 connections, whose bytes
 * undici's session reads. `onRetired` is told each connection the watch closes.
 */
export function watchStrayBytes(socket: Socket, onRetired?: OnRetired): void {
  listenToUndici();
  const state: Watched = { phase: 'idle', retire: undefined, head: false, answerEnd: -1, chunked: undefined, scanned: 0, onRetired };
  watched.set(socket, state);
  socket.on('readable', () => {
    if (socket.readableLength === 0) return;
    if (state.phase === 'reading') {
      if (state.chunked !== undefined) readChunked(socket, state);
      return;
    }
    if (state.phase === 'idle') {
      retire(socket, state, 'idle_bytes');
      return;
    }
    // The answer's first bytes: looked at and put back for undici, which reads them next.
    const first = socket.read() as Buffer | null;
    if (first === null) return;
    socket.unshift(first);
    state.phase = 'reading';
    if (first[0] !== STATUS_LINE_FIRST_BYTE) {
      state.retire = 'answer_not_status_line';
      return;
    }
    if (state.head) return;
    // `bytesRead` counts what the connection received (for TLS, the decrypted bytes): this answer starts at its value less `first`.
    const start = socket.bytesRead - first.length;
    const framing = answerFraming(first);
    if (framing.kind === 'length') state.answerEnd = start + framing.end;
    else if (framing.kind === 'chunked') {
      state.chunked = new ChunkedEnd();
      state.scanned = start + framing.bodyStart;
      scan(socket, state, first, framing.bodyStart);
    }
  });
}

/**
 * Bytes of a chunked answer that arrived since the last look: read and put back for undici, as its first bytes were, and their
 * framing read (their data stepped over). The copy `read()` makes when several reads wait joined is one undici's own `read()`
 * would make. Bytes undici took before this listener saw them (it reads more when its consumer resumes it) leave the end unknown:
 * the watch then knows what it knew before it read chunked framing.
 */
function readChunked(socket: Socket, state: Watched): void {
  const unseen = socket.bytesRead - state.scanned;
  if (unseen <= 0) return;
  if (unseen > socket.readableLength) {
    state.chunked = undefined;
    return;
  }
  const bytes = socket.read() as Buffer | null;
  if (bytes === null) return;
  socket.unshift(bytes);
  scan(socket, state, bytes, bytes.length - unseen);
}

/** Reads `bytes` (the connection's last, ending at `bytesRead`) from `from` for the chunked answer's end. */
function scan(socket: Socket, state: Watched, bytes: Buffer, from: number): void {
  const end = state.chunked!.scan(bytes, from);
  if (end === CHUNKED_END_NOT_YET) {
    state.scanned = socket.bytesRead;
    return;
  }
  state.chunked = undefined;
  if (end !== CHUNKED_END_LOST) state.answerEnd = socket.bytesRead - bytes.length + end;
}
