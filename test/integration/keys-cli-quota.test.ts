// `npm run keys` quotas, on Redis and through a gateway's admin API alike: create's flags, set-quota, and what show and list print.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { systemClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { runKeysCli, type CliResult } from '../helpers/run-keys-cli.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'keys-cli-quota-pepper-0001';
let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;

beforeAll(async () => {
  [redis, backend] = await Promise.all([startRedis(), startPetStore()]);
  // The CLI's clock is the system's: the gateway's must agree for the keys both make.
  gateway = await startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock: systemClock });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([backend?.close(), redis?.stop()]);
});

/** The two ways the CLI works: on Redis with the pepper, or through the admin API with a token and no Redis. */
const MODES = {
  redis: () => ({ args: [] as string[], env: { REDIS_URL: redis.url, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'production' } }),
  remote: () => ({
    args: ['--admin-url', `http://127.0.0.1:${gateway.adminPort}`],
    // An unreachable Redis: the remote mode must not need one.
    env: { ADMIN_API_TOKEN: ADMIN_TOKEN, REDIS_URL: 'redis://127.0.0.1:1' },
  }),
} as const;
type Mode = keyof typeof MODES;

function keys(mode: Mode, ...args: string[]): Promise<CliResult> {
  const { args: global, env } = MODES[mode]();
  return runKeysCli([...global, ...args], env);
}

/** Runs a command that succeeds with --json and returns its record. */
async function json(mode: Mode, ...args: string[]): Promise<Record<string, unknown>> {
  const result = await keys(mode, ...args, '--json');
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

const createKey = (mode: Mode, ...flags: string[]) => json(mode, 'create', '--consumer', `quota-${mode}`, '--environment', 'production', ...flags);

describe.each(['redis', 'remote'] as const)('in the %s mode', (mode) => {
  it('create takes --quota-per-day and --quota-per-month', async () => {
    const created = await createKey(mode, '--quota-per-day', '1000', '--quota-per-month', '25000');
    expect(created).toMatchObject({ quotaPerDay: 1000, quotaPerMonth: 25_000 });
    expect(await json(mode, 'show', created.id as string)).toMatchObject({ quotaPerDay: 1000, quotaPerMonth: 25_000 });
  });

  it('set-quota sets one and leaves the other', async () => {
    const { id, key: _secret, ...created } = await createKey(mode, '--quota-per-month', '3000');
    expect(await json(mode, 'set-quota', id as string, '--per-day', '50')).toEqual({ id, ...created, quotaPerDay: 50, quotaPerMonth: 3000 });
  });

  it('set-quota sets both', async () => {
    const { id } = await createKey(mode);
    expect(await json(mode, 'set-quota', id as string, '--per-day', '10', '--per-month', '200')).toMatchObject({ quotaPerDay: 10, quotaPerMonth: 200 });
  });

  it('set-quota removes one with none', async () => {
    const { id, key: _secret, quotaPerDay: _day, ...created } = await createKey(mode, '--quota-per-day', '10', '--quota-per-month', '200');
    const changed = await json(mode, 'set-quota', id as string, '--per-day', 'none');
    expect(changed).toEqual({ id, ...created });
    expect(changed).not.toHaveProperty('quotaPerDay');
  });

  it('set-quota removes both', async () => {
    const { id } = await createKey(mode, '--quota-per-day', '10', '--quota-per-month', '200');
    const changed = await json(mode, 'set-quota', id as string, '--per-day', 'none', '--per-month', 'none');
    expect(changed).not.toHaveProperty('quotaPerDay');
    expect(changed).not.toHaveProperty('quotaPerMonth');
  });

  it('set-quota prints the key as show does, the quotas on lines of their own', async () => {
    const { id } = await createKey(mode);
    const result = await keys(mode, 'set-quota', id as string, '--per-day', '10', '--per-month', '200');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('\n  daily quota:   10 per UTC day\n  monthly quota: 200 per UTC month\n');
    expect((await keys(mode, 'show', id as string)).stdout).toBe(result.stdout);
  });

  it('list prints the quotas of the keys that have them', async () => {
    const { id } = await createKey(mode, '--quota-per-month', '777');
    const listed = await keys(mode, 'list');
    expect(listed.code).toBe(0);
    const entry = listed.stdout.split('\n\n').find((block) => block.startsWith(`${id as string} `));
    expect(entry).toContain('\n  monthly quota: 777 per UTC month');
    expect(entry).not.toContain('daily quota');
  });

  it('set-quota on an unknown id exits 1 with the refusal', async () => {
    const result = await keys(mode, 'set-quota', 'key_unknown00000', '--per-day', '1');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      mode === 'redis' ? 'keys: no key with id key_unknown00000\n' : 'keys: the admin API refused: no key with id key_unknown00000 (404 not_found)\n',
    );
  });

  it.each([
    ['neither flag', ['set-quota', 'key_a'], 'keys: error: give --per-day, --per-month or both (none removes a quota)\n'],
    [
      'a quota of 0',
      ['set-quota', 'key_a', '--per-day', '0'],
      "keys: error: option '--per-day <n>' argument '0' is invalid. must be a positive integer, or none to remove the quota\n",
    ],
    [
      'a word other than none',
      ['set-quota', 'key_a', '--per-month', 'unlimited'],
      "keys: error: option '--per-month <n>' argument 'unlimited' is invalid. must be a positive integer, or none to remove the quota\n",
    ],
    [
      'a bad --quota-per-day',
      ['create', '--consumer', 'x', '--quota-per-day', '-1'],
      "keys: error: option '--quota-per-day <n>' argument '-1' is invalid. must be a positive integer\n",
    ],
    [
      'none given to create',
      ['create', '--consumer', 'x', '--quota-per-month', 'none'],
      "keys: error: option '--quota-per-month <n>' argument 'none' is invalid. must be a positive integer\n",
    ],
  ])('%s is a usage error (exit 2), nothing asked', async (_, args, message) => {
    const result = await keys(mode, ...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.slice(0, message.length)).toBe(message);
  });
});

describe('the help', () => {
  it('names set-quota and its flags', async () => {
    const result = await runKeysCli(['set-quota', '--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: keys set-quota [options] <id>');
    expect(result.stdout).toContain('--per-day <n>    requests per UTC day; none removes the daily quota');
    expect(result.stdout).toContain('--per-month <n>  requests per UTC month; none removes the monthly quota');
  });

  it('names create’s quota flags', async () => {
    const result = await runKeysCli(['create', '--help'], {});
    expect(result.stdout).toContain('--quota-per-day <n>');
    expect(result.stdout).toContain('--quota-per-month <n>');
  });
});
