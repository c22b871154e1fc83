// A client that leaves while its POST waits on Redis, before its body ended: an incomplete request, never an unexpected error.
import { once } from 'node:events';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

/** Each shape is sent this often: the close must land while the request waits on the rate limiter's Redis round trip. */
const TRIES = 10;

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: RedisGateway;
let key: string;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  // Exact rate limiting (the default): every request waits for Redis between authentication and validation.
  const config = loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } },
  );
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  gateway = await startRedisGateway(config, { pepper: 'body-gone-pepper-0001', logger: pino({ level: 'info' }, sink) });
  key = (await gateway.admin.create({ consumer: 'acme', environments: ['production'] })).key;
});
afterAll(async () => {
  await gateway.close();
  await backend.close();
  await redis.stop();
});

/** Writes `bytes`, then half-closes (FIN) or resets the connection at once, and waits for it to close. */
async function sendAndLeave(bytes: string, leave: 'end' | 'reset'): Promise<void> {
  const socket = connect(gateway.port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write(bytes);
  if (leave === 'end') socket.end();
  else socket.resetAndDestroy();
  socket.resume();
  await once(socket, 'close');
}

function head(id: string, framing: string): string {
  return `POST /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nX-Request-Id: ${id}\r\n${framing}\r\n`;
}

describe('a POST whose client leaves before its body ended', () => {
  it.each([
    ['Expect: 100-continue, then a FIN', 'end', 'Content-Length: 30\r\nExpect: 100-continue\r\n', ''],
    ['Expect: 100-continue, then a reset', 'reset', 'Content-Length: 30\r\nExpect: 100-continue\r\n', ''],
    ['part of a Content-Length body, then a FIN', 'end', 'Content-Length: 30\r\n', '{"name":'],
    ['part of a Content-Length body, then a reset', 'reset', 'Content-Length: 30\r\n', '{"name":'],
    ['a chunked body cut mid-chunk, then a FIN', 'end', 'Transfer-Encoding: chunked\r\n', '10\r\n{"name":'],
    ['a chunked body cut mid-chunk, then a reset', 'reset', 'Transfer-Encoding: chunked\r\n', '10\r\n{"name":'],
  ] as const)('%s: logged as 499, never as an unexpected error', async (shape, leave, framing, body) => {
    const from = logs.length;
    const tag = `gone-${shape.replaceAll(/[^a-z0-9]+/gi, '-')}`;
    for (let i = 0; i < TRIES; i++) await sendAndLeave(head(`${tag}-${i}`, framing) + body, leave);
    const accessLines = () => logs.filter((line) => typeof line.reqId === 'string' && line.reqId.startsWith(tag));
    await waitFor(async () => accessLines().length === TRIES);
    for (const line of accessLines()) {
      expect(line.res).toEqual({ statusCode: 499 });
      expect(line.errorCode === null || line.errorCode === 'invalid_request').toBe(true);
    }
    expect(logs.slice(from).filter((line) => (line.level as number) >= 50)).toEqual([]);
  });
});
