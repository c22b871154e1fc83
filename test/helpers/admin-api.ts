// The admin API over real HTTP: a gateway on a private Redis with a token file, requests from a chosen loopback address, the log it wrote.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Clock } from '../../src/time/clock.ts';
import { rawRequest } from './raw-request.ts';
import { ADMIN_TOKEN, SECOND_ADMIN_TOKEN } from '../../support/admin-token.ts';
import { startRedisGateway, type RedisGateway } from './start-redis-gateway.ts';

export { ADMIN_TOKEN, SECOND_ADMIN_TOKEN };

/** A file holding `lines`, in a directory of its own; returns its path. Remove it with `removeTokenFile`. */
export function tokenFile(...lines: string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gateway-admin-')), 'admin-tokens');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** Removes a file `tokenFile` made, with its directory. */
export function removeTokenFile(file: string): void {
  rmSync(dirname(file), { recursive: true, force: true });
}

export interface AdminAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined for an empty one. */
  body: unknown;
}

export interface AdminRequest {
  method?: string;
  token?: string | null;
  /** Sent as JSON unless a string (sent as it is). */
  body?: unknown;
  headers?: Record<string, string>;
  /** The loopback address the request comes from: the failed-attempt limit is per address. */
  from?: string;
}

/** One request to `port` on 127.0.0.1; `token` null sends no Authorization. */
export async function adminRequest(port: number, path: string, options: AdminRequest = {}): Promise<AdminAnswer> {
  const { method = 'GET', token = ADMIN_TOKEN, body, from = '127.0.0.1' } = options;
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = {
    ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    ...options.headers,
  };
  const res = await rawRequest(port, { method, path, headers, localAddress: from, ...(payload === undefined ? {} : { body: payload }) });
  return { status: res.status, headers: res.headers, body: res.body === '' ? undefined : JSON.parse(res.body) };
}

export interface AdminGateway extends RedisGateway {
  /** Every log line the gateway wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** The token file it reads (rewritten by reload tests). */
  tokenFile: string;
}

/** A production-wired gateway in process on `redisUrl`, its admin API on with ADMIN_TOKEN and SECOND_ADMIN_TOKEN. */
export async function startAdminGateway(options: {
  redisUrl: string;
  upstreamUrl: string;
  pepper: string;
  clock: Clock;
  env?: Record<string, string>;
  overrides?: Record<string, unknown>;
}): Promise<AdminGateway> {
  const file = tokenFile(ADMIN_TOKEN, SECOND_ADMIN_TOKEN);
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const env = {
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: options.redisUrl,
    UPSTREAM_URL: options.upstreamUrl,
    GATEWAY_ENVIRONMENT: 'production',
    ADMIN_API_TOKEN_FILE: file,
    ...options.env,
  };
  const read = () => loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 }, ...options.overrides });
  const gateway = await startRedisGateway(read(), { pepper: options.pepper, clock: options.clock, logger, reloadConfig: read });
  const close = gateway.close.bind(gateway);
  return Object.assign(gateway, {
    logs,
    tokenFile: file,
    async close() {
      await close();
      removeTokenFile(file);
    },
  });
}
