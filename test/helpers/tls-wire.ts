// A TLS client's connection from beneath: a reset or half a record under its session, and a ClientHello to write in the clear.
import { connect as connectTcp, createServer, type AddressInfo, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as connectTls } from 'node:tls';

/**
 * A TCP connection whose TLS session a client runs through `duplex`, so that it can end the connection under the session: a reset
 * (RST) at any point, or half of the next TLS record written before it. The gateway sees a TLS client like any other until then.
 */
export interface Wire {
  duplex: Duplex;
  raw: Socket;
  /** Writes only the first half of the next record (and nothing after it), then resets the connection. */
  cutNextRecord(): void;
}

export function openWire(port: number): Wire {
  const raw = connectTcp(port, '127.0.0.1');
  let cut: 'no' | 'next' | 'done' = 'no';
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      if (cut === 'done') return done();
      if (cut === 'next') {
        cut = 'done';
        // A record is a 5-byte header then its length: half of it, header included, carries none of its plaintext.
        const length = chunk.length >= 5 ? chunk.readUInt16BE(3) : chunk.length;
        raw.write(chunk.subarray(0, Math.min(chunk.length - 1, 5 + (length >> 1))), () => raw.resetAndDestroy());
        return done();
      }
      raw.write(chunk, () => done());
    },
    read() {
      raw.resume();
    },
    final(done) {
      raw.end();
      done();
    },
    destroy(error, done) {
      raw.destroy();
      done(error);
    },
  });
  raw.on('data', (chunk: Buffer) => {
    if (!duplex.push(chunk)) raw.pause();
  });
  raw.on('end', () => duplex.push(null));
  raw.on('close', () => duplex.destroy());
  raw.on('error', () => undefined);
  return {
    duplex,
    raw,
    cutNextRecord: () => {
      cut = 'next';
    },
  };
}

let clientHelloBytes: Promise<Buffer> | undefined;

/** The first flight of a TLS client as Node sends it (a ClientHello record, TLS 1.2 and 1.3 offered), read once by a listener of ours. */
export function clientHello(): Promise<Buffer> {
  clientHelloBytes ??= new Promise((resolve, reject) => {
    const capture = createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        resolve(chunk);
        socket.destroy();
        capture.close();
      });
    });
    capture.on('error', reject);
    capture.listen(0, '127.0.0.1', () => {
      const client = connectTls({ host: '127.0.0.1', port: (capture.address() as AddressInfo).port, servername: 'localhost' });
      client.on('error', () => undefined);
    });
  });
  return clientHelloBytes;
}
