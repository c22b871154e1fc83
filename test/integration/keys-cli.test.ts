// The operators' key CLI against a real Redis: keys are shown once and stored only as hashes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { refusedPort } from '../../support/start-upstream.ts';

let redis: PrivateRedis;
let env: Record<string, string>;

beforeAll(async () => {
  redis = await startRedis();
  env = { REDIS_URL: redis.url, API_KEY_PEPPER: 'cli-test-pepper-0123456789' };
});
afterAll(async () => {
  await redis.stop();
});

async function createKey(...args: string[]) {
  const result = await runKeysCli(['create', '--consumer', 'acme', '--json', ...args], env);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as {
    id: string;
    key: string;
    consumer: string;
    environments: string[];
    revoked: boolean;
    expiresAt?: string;
    rateLimitPerMinute?: number;
  };
}

describe('keys create', () => {
  it('prints one JSON line with the id and the key', async () => {
    const created = await createKey('--environment', 'production');
    expect(created.id).toMatch(/^key_[A-Za-z0-9_-]{12}$/);
    expect(created.key).toMatch(/^psk_live_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({ consumer: 'acme', environments: ['production'], revoked: false });
  });

  it('gives staging-only keys the test prefix', async () => {
    const created = await createKey('--environment', 'staging');
    expect(created.key).toMatch(/^psk_test_/);
  });

  it('takes both environments, an expiry and a rate limit', async () => {
    const created = await createKey(
      '--environment',
      'production',
      '--environment',
      'staging',
      '--expires-at',
      '2099-01-01T00:00:00Z',
      '--rate-limit-per-minute',
      '120',
    );
    expect(created).toMatchObject({ environments: ['production', 'staging'], expiresAt: '2099-01-01T00:00:00.000Z', rateLimitPerMinute: 120 });
  });

  it('prints the key once in human form too', async () => {
    const result = await runKeysCli(['create', '--consumer', 'human', '--environment', 'staging'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/API key \(shown this once; it cannot be recovered\):\n {2}psk_test_[A-Za-z0-9_-]{43}\n/);
  });

  it('takes --name, the deprecated spelling of --consumer, and says so on stderr', async () => {
    const result = await runKeysCli(['create', '--name', 'legacy', '--environment', 'staging', '--json'], env);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('keys: warning: --name is deprecated; use --consumer\n');
    expect(JSON.parse(result.stdout)).toMatchObject({ consumer: 'legacy' });
  });
});

describe('usage errors exit 2, before Redis is asked', () => {
  it.each([
    ['an unknown option', ['create', '--consumer', 'x', '--bogus'], "keys: error: unknown option '--bogus'\n"],
    ['an unknown subcommand', ['frobnicate'], "keys: error: unknown command 'frobnicate'\n"],
    [
      'a bad --environment',
      ['create', '--consumer', 'x', '--environment', 'prod'],
      "keys: error: option '--environment <environment>' argument 'prod' is invalid. must be one of production, staging\n",
    ],
    [
      'a bad --expires-at',
      ['create', '--consumer', 'x', '--expires-at', 'tomorrow'],
      "keys: error: option '--expires-at <iso>' argument 'tomorrow' is invalid. must be an ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z\n",
    ],
    [
      'a past --expires-at',
      ['create', '--consumer', 'x', '--expires-at', '2001-01-01T00:00:00Z'],
      "keys: error: option '--expires-at <iso>' argument '2001-01-01T00:00:00Z' is invalid. must be in the future\n",
    ],
    [
      'a bad --rate-limit-per-minute',
      ['create', '--consumer', 'x', '--rate-limit-per-minute', '0'],
      "keys: error: option '--rate-limit-per-minute <n>' argument '0' is invalid. must be a positive integer\n",
    ],
    [
      'a missing option value',
      ['create', '--consumer', 'x', '--rate-limit-per-minute'],
      "keys: error: option '--rate-limit-per-minute <n>' argument missing\n",
    ],
    ['a missing required option', ['create'], "keys: error: required option '--consumer <consumer>' not specified\n"],
    [
      'a consumer name with an escape sequence',
      ['create', '--consumer', 'acme\u001b[2J'],
      "keys: error: option '--consumer <consumer>' argument 'acme\u001b[2J' is invalid. a consumer name holds letters, marks, numbers, punctuation, symbols and inner spaces only: no control or format characters, other separators, or leading or trailing space\n",
    ],
    [
      'a consumer name of 129 characters',
      ['create', '--consumer', 'x'.repeat(129)],
      `keys: error: option '--consumer <consumer>' argument '${'x'.repeat(129)}' is invalid. a consumer name is at most 128 characters (this one has 129)\n`,
    ],
    [
      '--consumer and --name differing',
      ['create', '--consumer', 'one', '--name', 'other'],
      'keys: error: --consumer and --name (its deprecated spelling) differ: give --consumer only\n',
    ],
    ['a missing argument', ['show'], "keys: error: missing required argument 'id'\n"],
    [
      'a bad argument',
      ['set-limit', 'key_x', 'lots'],
      "keys: error: command-argument value 'lots' is invalid for argument 'perMinute'. must be a positive integer\n",
    ],
    ['an extra argument', ['revoke', 'key_a', 'key_b'], "keys: error: too many arguments for 'revoke'. Expected 1 argument but got 2: key_a, key_b.\n"],
  ])('%s: %j', async (_kind, args, message) => {
    // An unreachable Redis: were the arguments accepted, the command would fail with 1, not 2.
    const result = await runKeysCli(args, { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.slice(0, message.length)).toBe(message);
    expect(result.stderr).toContain('Usage: keys ');
  });

  it('exits 2 without a subcommand, showing the help on stderr', async () => {
    const result = await runKeysCli([], env);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^Usage: keys \[options\] \[command\]\n/);
  });

  it('exits 0 on --help', async () => {
    const result = await runKeysCli(['create', '--help'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: keys create \[options\]\n/);
  });
});

describe('keys list, show, revoke, rotate, set-limit', () => {
  it('lists keys without their secrets, as one JSON array', async () => {
    const created = await createKey('--environment', 'staging');
    const result = await runKeysCli(['list', '--json'], env);
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
    const records = JSON.parse(result.stdout) as Array<{ id: string }>;
    expect(records.map((record) => record.id)).toContain(created.id);
    expect(result.stdout).not.toContain(created.key);
    expect(result.stdout).not.toContain('psk_');
  });

  it('shows one key', async () => {
    const created = await createKey('--environment', 'staging');
    const result = await runKeysCli(['show', created.id, '--json'], env);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: created.id, consumer: 'acme', revoked: false });
    expect(result.stdout).not.toContain(created.key);
  });

  it('revokes a key', async () => {
    const created = await createKey('--environment', 'staging');
    const result = await runKeysCli(['revoke', created.id, '--json'], env);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: created.id, revoked: true });
  });

  it('rotates a key: new secret, same consumer, old one revoked', async () => {
    const created = await createKey('--environment', 'staging', '--rate-limit-per-minute', '30');
    const result = await runKeysCli(['rotate', created.id, '--json'], env);
    expect(result.code).toBe(0);
    const rotated = JSON.parse(result.stdout) as {
      id: string;
      key: string;
      consumer: string;
      rateLimitPerMinute: number;
      previous: { id: string; revoked: boolean };
    };
    expect(rotated.id).not.toBe(created.id);
    expect(rotated.key).not.toBe(created.key);
    expect(rotated).toMatchObject({ consumer: 'acme', rateLimitPerMinute: 30, previous: { id: created.id, revoked: true } });
  });

  it('rotates with an overlap: the old key expires later instead of being revoked', async () => {
    const created = await createKey('--environment', 'staging');
    const result = await runKeysCli(['rotate', created.id, '--overlap-seconds', '3600', '--json'], env);
    const rotated = JSON.parse(result.stdout) as { previous: { revoked: boolean; expiresAt: string } };
    expect(rotated.previous.revoked).toBe(false);
    const remaining = Date.parse(rotated.previous.expiresAt) - Date.now();
    expect(remaining).toBeGreaterThan(3500_000);
    expect(remaining).toBeLessThanOrEqual(3600_000);
  });

  it('sets a per-key rate limit', async () => {
    const created = await createKey('--environment', 'staging');
    const result = await runKeysCli(['set-limit', created.id, '45', '--json'], env);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: created.id, rateLimitPerMinute: 45 });
  });

  it('refuses to rotate a key again, naming its successor', async () => {
    const created = await createKey('--environment', 'staging');
    const rotated = JSON.parse((await runKeysCli(['rotate', created.id, '--overlap-seconds', '60', '--json'], env)).stdout) as { id: string };
    const again = await runKeysCli(['rotate', created.id], env);
    expect(again).toEqual({ code: 1, stdout: '', stderr: `keys: key ${created.id} was already rotated to ${rotated.id}; rotate that key instead\n` });
  });

  it.each([['show'], ['revoke'], ['rotate']])('%s of an unknown id fails clearly', async (command) => {
    const result = await runKeysCli([command, 'key_doesnotexist'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('keys: no key with id key_doesnotexist\n');
  });
});

describe('what Redis holds', () => {
  it('never holds a key in plaintext, in any Redis key or value', async () => {
    const secrets = [(await createKey('--environment', 'production')).key, (await createKey('--environment', 'staging')).key];
    const names = await redis.client.keys('*');
    expect(names.length).toBeGreaterThan(0);
    const dump: string[] = [];
    for (const name of names) {
      dump.push(name);
      const type = await redis.client.type(name);
      if (type === 'hash') dump.push(...Object.entries(await redis.client.hgetall(name)).flat());
      else if (type === 'set') dump.push(...(await redis.client.smembers(name)));
      else if (type === 'zset') dump.push(...(await redis.client.zrange(name, '0', '-1')));
      else if (type === 'string') dump.push((await redis.client.get(name)) ?? '');
      else throw new Error(`unexpected redis type ${type} at ${name}`);
    }
    const everything = dump.join('\n');
    for (const secret of secrets) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(secret.slice('psk_live_'.length));
    }
    expect(everything).not.toMatch(/psk_(live|test)_/);
  });
});

describe('REDIS_URL', () => {
  it('carries a password and a database number', async () => {
    const secured = await startRedis({ password: 's3cret-pass' });
    try {
      const result = await runKeysCli(['create', '--consumer', 'db3', '--environment', 'staging', '--json'], {
        ...env,
        REDIS_URL: `${secured.url}/3`,
      });
      expect(result.code).toBe(0);
      const { id } = JSON.parse(result.stdout) as { id: string };
      await secured.client.select(3);
      expect(await secured.client.sismember('petstore-gateway:{keys}:key-ids', id)).toBe(1);
      await secured.client.select(0);
      expect(await secured.client.exists('petstore-gateway:{keys}:key-ids')).toBe(0);
    } finally {
      await secured.stop();
    }
  });

  it('fails clearly on a wrong password', async () => {
    const secured = await startRedis({ password: 's3cret-pass' });
    try {
      const result = await runKeysCli(['list'], { ...env, REDIS_URL: secured.url.replace('s3cret-pass', 'wrong-pass') });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('is unreachable');
      expect(result.stderr).not.toContain('wrong-pass');
    } finally {
      await secured.stop();
    }
  });
});

describe('when Redis is unreachable', () => {
  it('exits non-zero with a message that names the address, without its password', async () => {
    const port = await refusedPort();
    const result = await runKeysCli(['list'], { REDIS_URL: `redis://:hunter2@127.0.0.1:${port}` });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`keys: Redis at redis://:***@127.0.0.1:${port} is unreachable`);
    expect(result.stderr).not.toContain('hunter2');
  });
});
