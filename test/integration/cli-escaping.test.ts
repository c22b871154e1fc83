// What the CLIs print from Redis, on a terminal: a name written raw by an older version cannot forge lines or send escape sequences.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyLayout, orderMember, toHashFields } from '../../src/auth/key-records.ts';
import type { KeyRecord } from '../../src/auth/key-store.ts';
import { runDeprecationsCli, runKeysCli } from '../helpers/run-keys-cli.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

/** What an admin API before the character set accepted: a name that clears the screen and forges a line. */
const HOSTILE = 'acme\u001b[2J\nrevoked: true\u0000\u202e';
const ESCAPED = 'acme\\x1b[2J\\x0arevoked: true\\x00\\u202e';
const ID = 'key_hostile00001';
const layout = keyLayout('petstore-gateway:');

let redis: PrivateRedis;
let env: Record<string, string>;

beforeAll(async () => {
  redis = await startRedis();
  env = { REDIS_URL: redis.url, API_KEY_PEPPER: 'cli-escaping-pepper-0123' };
  const record: KeyRecord = { id: ID, consumer: HOSTILE, environments: ['staging'], createdAt: '2026-11-21T12:00:00.000Z', revoked: false };
  const keyHash = 'e'.repeat(64);
  await redis.client
    .multi()
    .hset(layout.record(keyHash), toHashFields(record))
    .set(layout.byId(ID), keyHash)
    .sadd(layout.ids, ID)
    .zadd(layout.order, 0, orderMember(record))
    .exec();
  const deprecations = (what: string) => `petstore-gateway:{deprecations}:${what}:getPet`;
  const seen = Date.parse('2026-11-21T12:00:00.000Z');
  await redis.client
    .multi()
    .hset(deprecations('calls'), ID, '3')
    .hset(deprecations('consumers'), ID, HOSTILE)
    .zadd(deprecations('first-seen'), seen, ID)
    .zadd(deprecations('last-seen'), seen, ID)
    .exec();
});
afterAll(() => redis.stop());

/** No control or format character but the line ends the CLI writes itself. */
const CONTROL = /(?!\n)[\p{Cc}\p{Cf}]/u;

describe('npm run keys', () => {
  it('show escapes the consumer: one line, no control character', async () => {
    const result = await runKeysCli(['show', ID], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        `${ID}  active`,
        `  consumer:      ${ESCAPED}`,
        '  environments:  staging',
        '  created:       2026-11-21T12:00:00.000Z',
        '  expires:       never',
        '  rate limit:    environment default',
        '',
      ].join('\n'),
    );
  });

  it('list escapes it too', async () => {
    const result = await runKeysCli(['list'], env);
    expect(result.stdout).toContain(`  consumer:      ${ESCAPED}\n`);
    expect(result.stdout).not.toMatch(CONTROL);
    expect(result.stdout).not.toMatch(/^revoked:/m);
  });

  it('--json gives the name itself, escaped by JSON', async () => {
    const result = await runKeysCli(['list', '--json'], env);
    expect(result.stdout).not.toMatch(CONTROL);
    expect((JSON.parse(result.stdout) as Array<{ consumer: string }>)[0]!.consumer).toBe(HOSTILE);
  });
});

describe('npm run deprecations -- report', () => {
  it('escapes the consumer names of its table', async () => {
    const result = await runDeprecationsCli(['report'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`  ${ID}  ${ESCAPED}  3      2026-11-21T12:00:00.000Z  2026-11-21T12:00:00.000Z\n`);
    expect(result.stdout).not.toMatch(CONTROL);
  });
});
