// Where the process's log lines go: pino's asynchronous destination (sonic-boom) in its buffer mode.
import { pino, type DestinationStream } from 'pino';

export interface LogDestinationOptions {
  /** The file descriptor written to (1: stdout). */
  fd: number;
  /** Lines are written once this many bytes have gathered (and on every flush). */
  batchBytes: number;
  /** A reader that stops reading must not grow the process without bound: past this many bytes waiting, lines are dropped. */
  maxBufferedBytes: number;
}

export interface LogDestination extends DestinationStream {
  /** Starts writing what has gathered (asynchronously). */
  flush(): void;
  /**
   * Writes every line so far (shutdown): waits at most `timeoutMs` for the write under way (a stopped reader must not
   * hold the process), then writes the rest synchronously; an asynchronous write unfinished at exit would be lost.
   */
  writeAll(timeoutMs: number): Promise<void>;
  /** Writes what is waiting before returning, without waiting for a write under way (a fatal error, about to exit). */
  flushSync(): void;
}

/**
 * A Buffer per line, which sonic-boom joins once per write. Given strings, it grows one string and takes its UTF-8
 * length each write, copying it: about 16 KiB per line with 32 KiB batches, a quarter of all a request allocated.
 */
export function createLogDestination(options: LogDestinationOptions): LogDestination {
  // pino.destination: sonic-boom that stops quietly on a closed pipe (EPIPE) and flushes on exit.
  const sonic = pino.destination({
    fd: options.fd,
    sync: false,
    contentMode: 'buffer',
    minLength: options.batchBytes,
    // One write takes a whole batch (sonic-boom's default, 16 KiB, would split it).
    maxWrite: 2 * options.batchBytes,
    maxLength: options.maxBufferedBytes,
  });
  // In buffer mode sonic-boom takes Buffers; its type declarations only know strings.
  const bytes = sonic as unknown as { write(chunk: Buffer): boolean; flush(callback: (error?: Error) => void): void };
  return {
    write(line: string): void {
      bytes.write(Buffer.from(line, 'utf8'));
    },
    flush(): void {
      sonic.flush();
    },
    async writeAll(timeoutMs: number): Promise<void> {
      // flush's callback runs once no write is under way (its fsync error on a pipe means nothing here);
      // what is left then is less than a batch, written synchronously.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => bytes.flush(() => resolve())),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
      sonic.flushSync();
    },
    flushSync(): void {
      sonic.flushSync();
    },
  };
}
