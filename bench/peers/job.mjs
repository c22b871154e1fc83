// The job every peer does for a request, as the gateway does it: the bearer key looked up in Redis by its HMAC (cached in
// process), refused 401 when unknown, revoked or not for production; what the peers read from their environment.
import { createHmac } from 'node:crypto';
import { Redis } from 'ioredis';

export const settings = {
  port: Number(process.env.PEER_PORT ?? 0),
  /** The backend's origin; requests keep their /v1 path. */
  upstream: process.env.UPSTREAM_ORIGIN ?? 'http://127.0.0.1:4010',
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  pepper: process.env.API_KEY_PEPPER ?? '',
  /** The gateway's key layout (src/auth/key-records.ts): the record of a key is a HASH under its HMAC. */
  keyPrefix: process.env.KEY_PREFIX ?? 'petstore-gateway:',
  accessLog: process.env.ACCESS_LOG ?? '/dev/null',
};

export const redis = new Redis(settings.redisUrl, { enableAutoPipelining: false });

/** Key records by HMAC, kept a minute (the gateway keeps its own and drops them on revocation). */
const cache = new Map();
const CACHE_MS = 60_000;

/** The key's record when the request may pass, or undefined (answer 401). */
export async function authenticate(authorization) {
  if (typeof authorization !== 'string' || !authorization.startsWith('Bearer ')) return undefined;
  const keyHash = createHmac('sha256', settings.pepper).update(authorization.slice(7)).digest('hex');
  const now = Date.now();
  let entry = cache.get(keyHash);
  if (entry === undefined || entry.until < now) {
    const fields = await redis.hgetall(`${settings.keyPrefix}{keys}:key:${keyHash}`);
    entry = { record: fields.id ? fields : undefined, until: now + CACHE_MS };
    cache.set(keyHash, entry);
  }
  const record = entry.record;
  if (record === undefined || record.revoked === '1' || !record.environments.split(',').includes('production')) return undefined;
  return { id: record.id, consumer: record.consumer, perMinute: Number(record.rateLimitPerMinute) || 600 };
}

/** The Error body the gateway answers a refusal with. */
export function errorBody(code, message, status) {
  return JSON.stringify({ code, message, status });
}

/** The line the bench reads a server's port from. */
export function announce(port) {
  process.stdout.write(`${JSON.stringify({ msg: 'gateway listening', port })}\n`);
}
