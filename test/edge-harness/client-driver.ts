// Plays one client's byte script over a raw socket (TCP or TLS) and collects every byte the gateway writes back.
import { connect as connectTcp } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { TCP, type EdgeTransport } from '../helpers/edge-transport.ts';
import { clientHello, openWire } from '../helpers/tls-wire.ts';
import { completeFinals, parseReceived } from './response-parser.ts';
import { KEY_PLACEHOLDER, type ClientScript, type TlsHostility } from './script.ts';

export interface ClientOutcome {
  /** Everything received, latin1: HTTP, or (a cut handshake) the TLS records the gateway wrote in the clear. */
  received: string;
  /**
   * Script characters that went out as HTTP (placeholders counted as in the script), to tell which requests went out whole: 0 for a
   * plaintext client on a TLS port and a cut handshake (nothing of theirs reaches the HTTP parser), the cut piece not counted.
   */
  written: number;
  /** Who ended it: the gateway (close), the client's own early close, the client once it had every answer, or the hang detector. */
  end: 'server-closed' | 'client-closed' | 'done' | 'hung';
  /** What the client was waiting for when the hang detector fired. */
  hungWaiting?: string;
  /** A renegotiating client (TLS 1.2): whether the listener refused (an alert or a close), went through with it, or was not asked. */
  renegotiation?: { result: 'refused' | 'accepted' | 'unasked'; detail?: string };
}

export interface DriveOptions {
  port: number;
  key: string;
  /** What carries the bytes to the gateway's public listener (default plain TCP). */
  transport?: EdgeTransport;
  /**
   * Hang detector only, never a timing assertion: the longest the client waits for its next answer (or
   * the close) after its last write or answer. Generous: upstream totalTimeout plus a wide margin.
   */
  progressDeadlineMs: number;
  /** Told everything received so far after each read. */
  onReceived?: (received: string) => void;
}

export interface DrivenClient {
  /** Resolves once the client has every answer, closed, was closed, or hung. */
  settled: Promise<void>;
  /** Closes the socket (if still open) and returns everything received, late bytes included. */
  release(): ClientOutcome;
}

/** The most a cut handshake waits for the gateway's first flight: it may rightly wait for the rest of the hello instead. */
const SERVER_FLIGHT_CAP_MS = 500;

/** A client that starts a TLS handshake and leaves it (see TlsHostility): nothing of it is HTTP. */
function driveHandshakeCut(cut: Extract<TlsHostility, { kind: 'handshake-cut' }>, options: DriveOptions): DrivenClient {
  const socket = connectTcp(options.port, '127.0.0.1');
  let received = '';
  let end: ClientOutcome['end'] = 'client-closed';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const settled = (async () => {
    const hello = await clientHello();
    if (socket.connecting) await Promise.race([new Promise((resolve) => socket.once('connect', resolve)), closed]);
    socket.write(hello.subarray(0, Math.max(1, Math.ceil(cut.at * hello.length))));
    if (cut.awaitServer) {
      await Promise.race([
        new Promise((resolve) => socket.once('data', resolve)),
        closed.then(() => (end = 'server-closed')),
        new Promise((resolve) => setTimeout(resolve, SERVER_FLIGHT_CAP_MS)),
      ]);
    }
    if (cut.leave === 'reset') socket.resetAndDestroy();
    else socket.end();
    // A FIN is the gateway's to answer with its own close; never a hang: destroyed at the deadline all the same.
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, options.progressDeadlineMs))]);
  })();
  return {
    settled: settled.catch(() => undefined),
    release() {
      socket.destroy();
      return { received, written: 0, end };
    },
  };
}

/**
 * Plays the script. A client with every answer keeps its connection until `release()`, so that a response
 * the gateway writes after the last expected one is still seen.
 */
export function driveClient(script: ClientScript, options: DriveOptions): DrivenClient {
  if (script.tls?.kind === 'handshake-cut') return driveHandshakeCut(script.tls, options);
  const plaintext = script.tls?.kind === 'plaintext';
  const renegotiate = script.tls?.kind === 'renegotiate' ? script.tls : undefined;
  // A plaintext client speaks plain HTTP whatever the listener: to a TLS port, it is the hostile part.
  const transport = plaintext ? TCP : (options.transport ?? TCP);
  const how = script.earlyClose?.how ?? 'destroy';
  if (how === 'half-record' && transport.name !== 'tls') throw new Error('half a TLS record needs the TLS transport');
  // A reset or half a record under a TLS session needs the connection beneath it.
  const wire = transport.name === 'tls' && (how === 'reset' || how === 'half-record') ? openWire(options.port) : undefined;
  const bodiless = (index: number) => script.requests[index]?.method === 'HEAD';
  let ready = false;
  const socket = transport.connect(
    options.port,
    () => {
      ready = true;
      wake?.();
    },
    { ...(wire ? { socket: wire.duplex } : {}), ...(renegotiate ? { maxVersion: 'TLSv1.2' as const } : {}) },
  );
  let received = '';
  let written = 0;
  let closed = false;
  let settled = false;
  /** The client left on its own (close_notify, half a record): the close that follows is its doing. */
  let leaving = false;
  let end: ClientOutcome['end'] = 'done';
  let waiting = 'the connection';
  let renegotiation: ClientOutcome['renegotiation'];
  /** Told of an error or a close while a renegotiation is asked: the listener refused it. */
  let renegotiationEnded: ((detail: string) => void) | undefined;
  let lastWrite: Promise<void> = Promise.resolve();
  let resolveSettled: () => void = () => undefined;
  const settledPromise = new Promise<void>((resolve) => (resolveSettled = resolve));
  let wake: (() => void) | undefined;
  let deadline: NodeJS.Timeout | undefined;

  const finish = (how: ClientOutcome['end']) => {
    if (settled) return;
    settled = true;
    end = how;
    clearTimeout(deadline);
    if (how !== 'done') socket.destroy();
    resolveSettled();
  };
  const armDeadline = () => {
    clearTimeout(deadline);
    deadline = setTimeout(() => finish('hung'), options.progressDeadlineMs);
  };
  const finals = () => completeFinals(parseReceived(received, bodiless, closed));
  /** Resolves once `ready()` holds, re-checked on every byte received and on close. */
  const until = (what: string, ready: () => boolean) =>
    new Promise<void>((resolve) => {
      waiting = what;
      const check = () => {
        if (ready() || closed || settled) {
          wake = undefined;
          resolve();
        }
      };
      wake = check;
      check();
    });
  const write = (bytes: string) => {
    lastWrite = new Promise((resolve) => socket.write(bytes, () => resolve()));
  };

  let lastFinals = 0;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    options.onReceived?.(received);
    const now = finals();
    if (now > lastFinals) {
      lastFinals = now;
      armDeadline();
    }
    wake?.();
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (renegotiationEnded) return renegotiationEnded(error.code ?? error.message);
    // Node leaves a TLS socket open after a TLS error (an alert): the connection is over all the same.
    socket.destroy();
  });
  socket.on('close', () => {
    closed = true;
    wake?.();
    renegotiationEnded?.('the connection closed');
    finish(leaving ? 'client-closed' : 'server-closed');
  });

  /** Asks for a renegotiation (TLS 1.2); true when the listener went through with it, and the script goes on. */
  const askRenegotiation = () =>
    new Promise<boolean>((resolve) => {
      if (closed || settled) {
        renegotiation = { result: 'unasked', detail: 'the connection had closed' };
        return resolve(false);
      }
      const ended = (result: 'refused' | 'accepted', detail?: string) => {
        if (renegotiationEnded === undefined) return;
        renegotiationEnded = undefined;
        renegotiation = { result, ...(detail === undefined ? {} : { detail }) };
        if (result === 'accepted') return resolve(true);
        // Refused: the client's TLS stack gives the connection up (an alert is fatal to a renegotiation), whatever was in flight.
        leaving = true;
        finish('client-closed');
        resolve(false);
      };
      renegotiationEnded = (detail) => ended('refused', detail);
      (socket as TLSSocket).renegotiate({}, (error) =>
        ended(error ? 'refused' : 'accepted', error ? ((error as NodeJS.ErrnoException).code ?? error.message) : undefined),
      );
    });

  /** Leaves as the script says: the answers already received are kept, the rest is the client's doing. */
  async function leave(): Promise<void> {
    leaving = true;
    switch (how) {
      case 'destroy':
        return finish('client-closed');
      case 'reset':
        if (wire) wire.raw.resetAndDestroy();
        else socket.resetAndDestroy();
        return finish('client-closed');
      case 'close-notify':
        // TLS: close_notify then FIN; TCP: the FIN alone. The client reads on until the gateway closes its side too.
        socket.end();
        armDeadline();
        await until('the close that answers its close_notify', () => false);
        return finish('client-closed');
      case 'half-record': {
        // The pieces before have gone out whole; this one goes out as half a record, then the reset.
        const piece = script.pieces[script.earlyClose!.pieces - 1]!;
        await lastWrite;
        wire!.cutNextRecord();
        socket.write(piece.bytes.replaceAll(KEY_PLACEHOLDER, options.key));
        await Promise.race([new Promise((resolve) => wire!.raw.once('close', resolve)), new Promise((resolve) => setTimeout(resolve, 1000))]);
        return finish('client-closed');
      }
    }
  }

  async function play(): Promise<void> {
    // A handshake that neither completes nor fails is a hang too.
    armDeadline();
    await until('the connection', () => ready);
    if (closed || settled) return;
    armDeadline();
    // Half a record is the last piece's: it is written by `leave`, and never counted.
    const stopAfter = (script.earlyClose?.pieces ?? Infinity) - (how === 'half-record' ? 1 : 0);
    for (const [index, piece] of script.pieces.entries()) {
      if (index >= stopAfter) break;
      if (renegotiate?.afterPieces === index && !(await askRenegotiation())) return;
      if (piece.afterFinals !== undefined) await until(`${piece.afterFinals} answers before piece ${index}`, () => finals() >= piece.afterFinals!);
      if (piece.afterContinues !== undefined) {
        await until(
          `100 Continue #${piece.afterContinues} before piece ${index}`,
          () => parseReceived(received, bodiless, closed).continues >= piece.afterContinues!,
        );
      }
      if (piece.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, piece.delayMs));
      if (closed || settled) return;
      write(piece.bytes.replaceAll(KEY_PLACEHOLDER, options.key));
      // Bytes in the clear to a TLS port are no request: none of them counts as sent.
      if (!plaintext) written += piece.bytes.length;
      armDeadline();
    }
    if (renegotiate !== undefined && renegotiation === undefined && !(await askRenegotiation())) return;
    if (script.earlyClose) {
      if (script.earlyClose.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, script.earlyClose!.delayMs));
      if (closed || settled) return;
      return leave();
    }
    // With garbage sent, the gateway ends the connection (with or without a final 400): wait for its close.
    if (script.garbage || plaintext) {
      await until('the close', () => false);
      return;
    }
    await until(`${script.requests.length} answers`, () => finals() >= script.requests.length);
    if (!closed) finish('done');
  }
  void play();
  return {
    settled: settledPromise,
    release() {
      socket.destroy();
      return { received, written, end, ...(end === 'hung' ? { hungWaiting: waiting } : {}), ...(renegotiation ? { renegotiation } : {}) };
    },
  };
}
