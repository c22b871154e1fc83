// The emptied key store is noticed: after holding keys, a count of none is logged once, counted, and the gauge reads 0 (a real Redis).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { watchKeyStore, type KeyStoreWatch } from '../../src/auth/key-store-watch.ts';
import { pepperFingerprint } from '../../src/auth/pepper-fingerprint.ts';
import { watchPepper } from '../../src/auth/pepper-watch.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const PREFIX = 'watch-test:';
const IDS = `${PREFIX}{keys}:key-ids`;
const FINGERPRINT = `${PREFIX}{keys}:pepper-fingerprint`;
const PEPPER = 'key-store-watch-pepper-000001';

let redis: PrivateRedis;
let watch: KeyStoreWatch;
let lines: Array<Record<string, unknown>>;
let counts: number[];
let emptied: number;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  await redis.client.flushall();
  lines = [];
  counts = [];
  emptied = 0;
});
afterEach(() => watch.close());

/** A watch whose timer never runs on its own: the test calls check(). */
function start(): KeyStoreWatch {
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  watch = watchKeyStore(redis.client, {
    keyPrefix: PREFIX,
    logger,
    checkMs: 5000,
    onChecked: (keys) => counts.push(keys),
    onEmptied: () => emptied++,
    every: () => ({ stop: () => undefined }),
  });
  return watch;
}

async function holdKeys(): Promise<void> {
  await redis.client.sadd(IDS, 'key_a', 'key_b');
  await redis.client.set(FINGERPRINT, 'hmac-sha256:abc');
}

describe('watchKeyStore', () => {
  it('says nothing of a Redis that never held keys (a new deployment)', async () => {
    await start().check();
    await watch.check();
    expect({ counts, emptied, lines }).toEqual({ counts: [0, 0], emptied: 0, lines: [] });
  });

  it('reports the count at every check', async () => {
    await holdKeys();
    await start().check();
    expect(counts).toEqual([2]);
  });

  it('logs one error line and counts one emptying when the keys it saw are gone', async () => {
    await holdKeys();
    await start().check();
    await redis.client.flushall();
    await watch.check();
    await watch.check();
    expect({ counts, emptied }).toEqual({ counts: [2, 0, 0], emptied: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      keyPrefix: PREFIX,
      pepperFingerprintKept: false,
      runbook: 'docs/operations.md#runbook-petstoregatewaykeystoreemptied',
      msg: `key store emptied: Redis holds no API key under the prefix "${PREFIX}" any more (it held some before; the pepper fingerprint is gone too): every key is refused 401 until the keys are restored (npm run keys -- import FILE), see docs/operations.md#runbook-petstoregatewaykeystoreemptied`,
    });
  });

  it('says it again after the keys were restored and lost once more', async () => {
    await holdKeys();
    await start().check();
    await redis.client.flushall();
    await watch.check();
    await holdKeys();
    await watch.check();
    await redis.client.del(IDS);
    await watch.check();
    expect({ counts, emptied, lines: lines.length }).toEqual({ counts: [2, 0, 2, 0], emptied: 2, lines: 2 });
    expect(lines[1]).toMatchObject({ pepperFingerprintKept: true });
  });

  it('counts nothing while Redis does not answer', async () => {
    await holdKeys();
    await start().check();
    await redis.kill();
    await watch.check();
    await redis.restart();
    expect({ counts, emptied }).toEqual({ counts: [2], emptied: 0 });
  });
});

describe('the pepper watch after the store was emptied', () => {
  it('stays ready and records no fingerprint in the emptied Redis (the import records it)', async () => {
    await holdKeys();
    await redis.client.set(FINGERPRINT, pepperFingerprint(PEPPER));
    const answers: boolean[] = [];
    const pepper = watchPepper(redis.client, {
      keyPrefix: PREFIX,
      fingerprint: pepperFingerprint(PEPPER),
      logger: pino({ level: 'silent' }),
      retryMs: 20,
      recheckMs: 20,
      onChecked: (matches) => answers.push(matches),
    });
    watch = { check: async () => undefined, close: () => pepper.close() };
    await waitFor(async () => answers.length > 0);
    await redis.client.flushall();
    const before = answers.length;
    await waitFor(async () => answers.length >= before + 2);
    expect(await redis.client.exists(FINGERPRINT)).toBe(0);
    expect(answers.slice(before)).not.toContain(false);
    expect(await pepper.readiness.check()).toBe(true);
  });
});
