// Where the process's log lines go: pino's asynchronous destination (sonic-boom), fed in batches.
import { pino, type DestinationStream } from 'pino';

export interface LogDestinationOptions {
  /** The file descriptor written to (1: stdout). */
  fd: number;
  /** Lines are handed over for writing once this many bytes have gathered (and on every flush). */
  batchBytes: number;
  /** A reader that stops reading must not grow the process without bound: past this many bytes waiting, lines are dropped. */
  maxBufferedBytes: number;
}

export interface LogDestination extends DestinationStream {
  /** Hands over what has gathered and writes it asynchronously. */
  flush(): void;
  /** Writes everything still held before returning (shutdown, a fatal error). */
  flushSync(): void;
}

/** A UTF-16 code unit takes at most 3 bytes in UTF-8 (a surrogate pair, two units, takes 4). */
const MAX_UTF8_BYTES_PER_UNIT = 3;

/**
 * Each line is copied into one batch buffer as it comes, and whole batches go to sonic-boom in its
 * buffer mode. Handed lines one by one, sonic-boom appends each to a growing string and takes that
 * string's UTF-8 length on every write, which copies it whole: with a 32 KiB batch, about 16 KiB
 * copied and left to the garbage collector per line, most of the gateway's allocation per request.
 */
export function createLogDestination(options: LogDestinationOptions): LogDestination {
  const { batchBytes } = options;
  // Before pino's own exit hook (which flushes sonic-boom): the last batch is handed over first.
  process.once('exit', () => {
    try {
      handOver();
      sonic.flushSync();
    } catch {
      // Closed already (end() or a closed pipe): nothing can be written any more.
    }
  });
  // pino.destination: sonic-boom that stops quietly on a closed pipe (EPIPE) and flushes on exit.
  const sonic = pino.destination({ fd: options.fd, sync: false, contentMode: 'buffer', minLength: 0, maxLength: options.maxBufferedBytes });
  // In buffer mode sonic-boom takes Buffers; its type declarations only know strings.
  const bytesSink = sonic as unknown as { write(bytes: Buffer): boolean };
  // Room for one more line of any length up to a batch, so a batch is never written half-way through a line.
  const capacity = 2 * batchBytes;
  let batch = Buffer.allocUnsafeSlow(capacity);
  let used = 0;

  function handOver(): void {
    if (used === 0) return;
    // The batch goes to sonic-boom as it is; the next lines go to a new one.
    bytesSink.write(batch.subarray(0, used));
    batch = Buffer.allocUnsafeSlow(capacity);
    used = 0;
  }

  return {
    write(line: string): void {
      const worstCase = line.length * MAX_UTF8_BYTES_PER_UNIT;
      if (worstCase > capacity - used) handOver();
      if (worstCase > capacity) {
        bytesSink.write(Buffer.from(line, 'utf8'));
        return;
      }
      used += batch.write(line, used);
      if (used >= batchBytes) handOver();
    },
    flush(): void {
      handOver();
      sonic.flush();
    },
    flushSync(): void {
      handOver();
      sonic.flushSync();
    },
  };
}
