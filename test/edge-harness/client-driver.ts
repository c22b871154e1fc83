// Plays one client's byte script over a raw socket and collects every byte the gateway writes back.
import { connect } from 'node:net';
import { completeFinals, parseReceived } from './response-parser.ts';
import { KEY_PLACEHOLDER, type ClientScript } from './script.ts';

export interface ClientOutcome {
  /** Everything received, latin1. */
  received: string;
  /** Script characters written (placeholders counted as in the script), to tell which requests went out whole. */
  written: number;
  /** Who ended it: the gateway (close), the client's own early close, the client once it had every answer, or the hang detector. */
  end: 'server-closed' | 'client-closed' | 'done' | 'hung';
  /** What the client was waiting for when the hang detector fired. */
  hungWaiting?: string;
}

export interface DriveOptions {
  port: number;
  key: string;
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

/**
 * Plays the script. A client with every answer keeps its connection until `release()`, so that a response
 * the gateway writes after the last expected one is still seen.
 */
export function driveClient(script: ClientScript, options: DriveOptions): DrivenClient {
  const bodiless = (index: number) => script.requests[index]?.method === 'HEAD';
  const socket = connect(options.port, '127.0.0.1');
  let received = '';
  let written = 0;
  let closed = false;
  let settled = false;
  let end: ClientOutcome['end'] = 'done';
  let waiting = 'the connection';
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
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
    wake?.();
    finish('server-closed');
  });

  async function play(): Promise<void> {
    await until('the connection', () => !socket.connecting);
    armDeadline();
    const stopAfter = script.earlyClose?.pieces ?? Infinity;
    for (const [index, piece] of script.pieces.entries()) {
      if (index >= stopAfter) break;
      if (piece.afterFinals !== undefined) await until(`${piece.afterFinals} answers before piece ${index}`, () => finals() >= piece.afterFinals!);
      if (piece.afterContinues !== undefined) {
        await until(
          `100 Continue #${piece.afterContinues} before piece ${index}`,
          () => parseReceived(received, bodiless, closed).continues >= piece.afterContinues!,
        );
      }
      if (piece.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, piece.delayMs));
      if (closed || settled) return;
      socket.write(piece.bytes.replaceAll(KEY_PLACEHOLDER, options.key));
      written += piece.bytes.length;
      armDeadline();
    }
    if (script.earlyClose) {
      if (script.earlyClose.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, script.earlyClose!.delayMs));
      finish('client-closed');
      return;
    }
    // With garbage sent, the gateway ends the connection (with or without a final 400): wait for its close.
    if (script.garbage) return;
    await until(`${script.requests.length} answers`, () => finals() >= script.requests.length);
    if (!closed) finish('done');
  }
  socket.once('connect', () => void play());
  return {
    settled: settledPromise,
    release() {
      socket.destroy();
      return { received, written, end, ...(end === 'hung' ? { hungWaiting: waiting } : {}) };
    },
  };
}
