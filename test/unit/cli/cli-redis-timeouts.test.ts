// The tests' CLIs wait for Redis as long as TEST_TIME_SCALE allows: the shipped file's timeouts, scaled, and nothing else changed.
import { describe, expect, it } from 'vitest';
import { dirname, resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../../src/config/load-config.ts';
import { withScaledRedisTimeouts } from '../../helpers/run-keys-cli.ts';

describe('the Redis timeouts of the CLIs the tests run', () => {
  it('are the shipped file’s times the scale, every other setting as shipped', () => {
    const shipped = loadConfig({});
    const scaledConfig = loadConfig(withScaledRedisTimeouts({}, 3));
    expect(scaledConfig.redis.commandTimeoutMs).toBe(shipped.redis.commandTimeoutMs * 3);
    expect(scaledConfig.redis.connectTimeoutMs).toBe(shipped.redis.connectTimeoutMs * 3);
    const { redis: _scaled, contract: scaledContract, ...rest } = scaledConfig;
    const { redis: _shipped, contract: shippedContract, ...shippedRest } = shipped;
    expect(rest).toEqual(shippedRest);
    // The copy lives elsewhere: it names the same interface document by its absolute path.
    expect(scaledContract).toBe(resolve(dirname(DEFAULT_CONFIG_FILE), shippedContract));
  });

  it('leave a file the test names, and a scale of 1, alone', () => {
    expect(withScaledRedisTimeouts({ GATEWAY_CONFIG: 'mine.yaml' }, 3)).toEqual({ GATEWAY_CONFIG: 'mine.yaml' });
    expect(withScaledRedisTimeouts({ REDIS_URL: 'redis://127.0.0.1:1' }, 1)).toEqual({ REDIS_URL: 'redis://127.0.0.1:1' });
  });
});
