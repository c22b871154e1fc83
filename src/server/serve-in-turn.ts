// Admits requests: a connection's pipelined requests are served one at a time, and the drain knows when all are answered.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ServeInTurnOptions {
  /** Pipelined requests that may wait behind the one served; past this the connection closes (a flood costs one request in flight). */
  maxQueuedPerConnection: number;
}

export interface RequestAdmission {
  /** For the server's `request`, `checkContinue` and `checkExpectation` events. */
  listener: RequestListener;
  /** Connections with a request served or waiting; not requests, which the request tracker alone counts. */
  busyConnections(): number;
  /** Resolves when no connection is busy (at once if none is): every accepted request answered, what the drain waits for. */
  idle(): Promise<void>;
  /**
   * For a parser error: runs `answer` (the refusal) in its turn: at once within the served request's unanswered body or with nothing
   * in flight, else after the complete requests before the bad bytes. False when the request the error is in was answered already:
   * the caller closes without a second answer. Only Node's first report counts (it repeats it for every later chunk).
   */
  answerInTurn(socket: Socket, answer: () => void): boolean;
  /** What the connection on `socket` (the one requests arrive on) is doing, for the connection's owner (client-connections.ts). */
  turnOf(socket: Socket): ConnectionTurn | undefined;
  /** Whether the request answered on `socket` now still has body bytes to come: its answer was sent before the body was read. */
  answeringBeforeBody(socket: Socket): boolean;
}

/** A connection's turn as its owner sees it: an answer owed, or nothing since `readWhenQuiet` bytes had been read. */
export interface ConnectionTurn {
  /** A request is being answered or waits its turn. */
  readonly busy: boolean;
  /** The socket's `bytesRead` when it last had nothing to answer: more read since is a request under way. */
  readonly readWhenQuiet: number;
}

interface ConnectionState {
  waiting: Array<[IncomingMessage, ServerResponse]>;
  current?: [IncomingMessage, ServerResponse] | undefined;
  /** A response was sent before the request's body had arrived: the rest of that body gets no answer. */
  answeredEarly: boolean;
  /** Reading was paused here (not by Node's own backpressure), so it is resumed here. */
  paused: boolean;
  /** Bytes after the requests in flight did not parse: their refusal, written once those are answered. */
  refusal?: (() => void) | undefined;
  /** A parser error was dealt with: later reports of it (one per chunk read) change nothing. */
  parseErrorSeen: boolean;
  /** A request is being served or waits: counted in `busyConnections` once. */
  busy: boolean;
  readWhenQuiet: number;
}

export function serveInTurn(handler: RequestListener, options: ServeInTurnOptions): RequestAdmission {
  const connections = new WeakMap<Socket, ConnectionState>();
  let busy = 0;
  let idleWaiters: Array<() => void> = [];
  function engaged(state: ConnectionState): void {
    if (state.busy) return;
    state.busy = true;
    busy++;
  }
  /** Nothing is served or waits on the connection any more. */
  function quiet(state: ConnectionState, socket: Socket): void {
    if (!state.busy) return;
    state.busy = false;
    state.readWhenQuiet = socket.bytesRead;
    busy--;
    if (busy > 0 || idleWaiters.length === 0) return;
    for (const wake of idleWaiters) wake();
    idleWaiters = [];
  }

  /** Forgets the requests waiting on a connection that will never serve them. */
  function dropWaiting(state: ConnectionState, socket: Socket): void {
    state.waiting.length = 0;
    if (state.current === undefined) quiet(state, socket);
  }

  function stateOf(socket: Socket): ConnectionState {
    let state = connections.get(socket);
    if (!state) {
      const created: ConnectionState = { waiting: [], answeredEarly: false, paused: false, parseErrorSeen: false, busy: false, readWhenQuiet: 0 };
      connections.set(socket, created);
      // Requests still waiting when the connection goes will never be served.
      socket.once('close', () => dropWaiting(created, socket));
      state = created;
    }
    return state;
  }

  function serve(state: ConnectionState, req: IncomingMessage, res: ServerResponse): void {
    state.current = [req, res];
    state.answeredEarly = false;
    res.once('close', () => {
      state.current = undefined;
      // Node ends the socket (without destroying it yet) after a response that said Connection: close.
      if (req.socket.destroyed || req.socket.writableEnded || !res.shouldKeepAlive) {
        // The connection went (this close may run before the socket's own), or this response closes it
        // (a drain, a refusal with a body still arriving): nobody is left to answer the waiting requests.
        dropWaiting(state, req.socket);
        return;
      }
      if (!req.complete) state.answeredEarly = true;
      if (state.waiting.length > 0) setImmediate(serveNext, state, req.socket);
      else {
        quiet(state, req.socket);
        if (state.refusal) {
          // The last complete request before the bad bytes is answered: now their refusal, which closes.
          const refuse = state.refusal;
          state.refusal = undefined;
          refuse();
        } else if (state.paused) {
          state.paused = false;
          req.socket.resume();
        }
      }
    });
    handler(req, res);
  }

  /** On the event loop's next turn: a response can close within its own turn, so serving from there would answer a whole flood at once. */
  function serveNext(state: ConnectionState, socket: Socket): void {
    // The connection went or is ending meanwhile (a refusal, the client's FIN): what was waiting is never served.
    if (socket.destroyed || socket.writableEnded) {
      dropWaiting(state, socket);
      return;
    }
    const next = state.waiting.shift();
    if (next) serve(state, ...next);
  }

  return {
    listener(req, res) {
      // A request after an answer that closed the connection (sent during its lingering close): it gets no answer.
      if (req.socket.writableEnded) {
        req.socket.destroy();
        return;
      }
      const state = stateOf(req.socket);
      // Nothing being served nor waiting its turn (between two turns, the waiting go first).
      if (state.current === undefined && state.waiting.length === 0) {
        engaged(state);
        serve(state, req, res);
        return;
      }
      if (state.waiting.length >= options.maxQueuedPerConnection) {
        req.socket.destroy();
        return;
      }
      state.waiting.push([req, res]);
      // The waiting request's body, if any, is already parsed; read no further until the queue drains.
      state.paused = true;
      req.socket.pause();
    },
    busyConnections: () => busy,
    turnOf: (socket) => connections.get(socket),
    answeringBeforeBody(socket) {
      const current = connections.get(socket)?.current;
      return current !== undefined && !current[0].complete;
    },
    idle: () => (busy === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    answerInTurn(socket, answer) {
      const state = stateOf(socket);
      if (state.parseErrorSeen) return true;
      state.parseErrorSeen = true;
      if (state.current) {
        const [req, res] = state.current;
        // Within the body of the request being served: the refusal is its answer, unless it has one already.
        if (!req.complete) {
          if (res.headersSent) return false;
          answer();
          return true;
        }
        state.refusal = answer;
        return true;
      }
      // Between two turns: after the waiting requests.
      if (state.waiting.length > 0) {
        state.refusal = answer;
        return true;
      }
      // In the rest of a body whose request was answered before it arrived: that request has its answer.
      if (state.answeredEarly) return false;
      answer();
      return true;
    },
  };
}
