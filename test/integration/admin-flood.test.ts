// Thousands of half-sent requests on the admin port, against a gateway process: capped, the public listener and /readyz keep answering.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, waitFor, waitUntilReady, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

/** Half-sent admin requests the hostile clients hold: ten times the default listen.adminMaxConnections (256). */
const HOSTILE = 3000;
const CAP = 256;
/** Connections opened at once, so the flood takes a second or two rather than one connect at a time. */
const BATCH = 100;
/** Hang detection only. */
const HANG_MS = 20_000;

let redis: PrivateRedis;
let gateway: GatewayProcess;

beforeAll(async () => {
  redis = await startRedis();
  // Nothing here reaches the upstream: the public request below is refused before it (no key).
  gateway = await startGatewayProcess({ REDIS_URL: redis.url, UPSTREAM_URL: 'http://127.0.0.1:9/v1', API_KEY_PEPPER: 'admin-flood-pepper-0001' });
  await waitUntilReady(gateway);
});
afterAll(async () => {
  await gateway.stop();
  await redis.stop();
});

/** The gateway process's resident set, in bytes (Linux). */
function rssOf(pid: number): number {
  const kilobytes = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kilobytes) * 1024;
}

async function halfSent(port: number, onClose: () => void): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.on('close', onClose);
  await once(socket, 'connect');
  socket.write('GET /metrics HTTP/1.1\r\nHost: admin\r\nX-Slow: ');
  return socket;
}

describe('a flood of half-sent admin requests', () => {
  it('holds at most listen.adminMaxConnections of them, while public requests and /readyz are answered', async () => {
    const pid = gateway.child.pid!;
    const before = rssOf(pid);
    const sockets: Socket[] = [];
    let closed = 0;
    try {
      for (let opened = 0; opened < HOSTILE; opened += BATCH) {
        sockets.push(...(await Promise.all(Array.from({ length: BATCH }, () => halfSent(gateway.adminPort, () => closed++)))));
      }
      // Every connection beyond the cap made room by closing an older one: the gateway holds the cap, not the flood.
      await waitFor(async () => closed >= HOSTILE - CAP, HANG_MS);
      const held = rssOf(pid);

      const refused = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ code: 'unauthorized', status: 401 });
      const ready = await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready' });

      for (const socket of sockets) socket.destroy();
      await waitFor(async () => closed === HOSTILE, HANG_MS);
      const after = rssOf(pid);
      // Measured (docs/operations.md, "The admin listener under load"): about 2 MB held with the cap, about
      // 22 MB (and not returned) without it, for 3000. Printed for the record; the bound tells the two apart.
      console.log(`admin flood: RSS ${mb(before)} MB before, ${mb(held)} MB held, ${mb(after)} MB after ${HOSTILE} half-sent requests`);
      expect(held - before).toBeLessThan(12 * 1024 * 1024);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
