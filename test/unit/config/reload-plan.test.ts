// planReload: what a reload takes up at once, and what waits for a restart (named, and kept as it runs).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { configurationHash, isRestartSetting, planReload, RESTART_SETTINGS } from '../../../src/config/reload-plan.ts';

const ENV = { UPSTREAM_URL: 'http://127.0.0.1:4010/v1', GATEWAY_ENVIRONMENT: 'staging' };
const running = loadConfig(ENV);

describe('planReload', () => {
  it('names nothing and changes nothing when the configuration is the same', () => {
    const { effective, needRestart } = planReload(running, loadConfig(ENV));
    expect(needRestart).toEqual([]);
    expect(effective).toEqual(running);
  });

  it.each([
    ['rate limits', { rateLimit: { limits: { staging: { default: 5 }, production: { default: 5 } } } }, 'rateLimit.limits.staging.default', 5],
    ['the request body limit', { requests: { maxBodyBytes: 100 } }, 'requests.maxBodyBytes', 100],
    ['upstream timeouts', { upstream: { timeoutMs: 123 } }, 'upstream.timeoutMs', 123],
    ['breaker settings', { upstream: { circuitBreaker: { failureThreshold: 9 } } }, 'upstream.circuitBreaker.failureThreshold', 9],
    ['the log level', { logging: { level: 'warn' } }, 'logging.level', 'warn'],
    ['stability access', { stability: { staging: { experimental: 'deny' } } }, 'stability.staging.experimental', 'deny'],
    ['header lists', { headers: { relayToClient: ['x-backend-version'] } }, 'headers.relayToClient.0', 'x-backend-version'],
  ])('takes up %s at once', (_what, overrides, path, value) => {
    const { effective, needRestart } = planReload(running, loadConfig(ENV, overrides));
    expect(needRestart).toEqual([]);
    expect(path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], effective)).toEqual(value);
  });

  it.each([
    ['listen', { PORT: '8181' }, ['listen.port']],
    ['the upstream address', { UPSTREAM_URL: 'http://127.0.0.1:4011/v1' }, ['upstreamUrl']],
    ['the environment', { GATEWAY_ENVIRONMENT: 'production' }, ['environment']],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:6390' }, ['redis.url']],
    ['the rate-limit store', { RATE_LIMIT_MODE: 'local-first' }, ['rateLimit.mode']],
  ])('keeps %s as it runs and names it as needing a restart', (_what, env, named) => {
    const next = loadConfig({ ...ENV, ...env });
    const { effective, needRestart } = planReload(running, next);
    expect(needRestart).toEqual(named);
    for (const path of named) {
      const read = (config: object) => path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], config);
      expect(read(effective)).toEqual(read(running));
    }
    expect(effective.upstreamBaseUrl).toBe(running.upstreamBaseUrl);
    expect(effective.sources.map((source) => source.upstreamBaseUrl)).toEqual(running.sources.map((source) => source.upstreamBaseUrl));
  });

  it('names the key under a restart setting, not its section', () => {
    const { needRestart } = planReload(running, loadConfig(ENV, { auth: { cache: { ttlMs: running.auth.cache.ttlMs + 1 } } }));
    expect(needRestart).toEqual(['auth.cache.ttlMs']);
  });

  it('names the keys it takes up, and none it keeps for a restart', () => {
    const { changed } = planReload(running, loadConfig({ ...ENV, PORT: '8181' }, { requests: { maxBodyBytes: 100 }, logging: { level: 'warn' } }));
    expect(changed).toEqual(['requests.maxBodyBytes', 'logging.level']);
  });

  it('names a changed password by its key only', () => {
    const { needRestart, changed } = planReload(running, loadConfig(ENV, { redis: { password: 'a-new-redis-password' } }));
    expect(needRestart).toEqual(['redis.password']);
    expect(changed).toEqual([]);
  });

  it('takes up the rest of a file that also changes a restart setting', () => {
    const { effective, needRestart } = planReload(running, loadConfig({ ...ENV, PORT: '8181' }, { requests: { maxBodyBytes: 100 } }));
    expect(needRestart).toEqual(['listen.port']);
    expect(effective.requests.maxBodyBytes).toBe(100);
    expect(effective.listen.port).toBe(running.listen.port);
  });

  it('lists only settings the gateway has', () => {
    for (const path of RESTART_SETTINGS) {
      expect(
        path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], running),
        path,
      ).toBeDefined();
    }
  });

  it('keeps the list of documents as it runs, naming it, and with it the version deprecation that came along', () => {
    const next = loadConfig(ENV, { contract: 'other.openapi.yaml', versionDeprecation: { deprecatedAt: '2026-12-01T00:00:00Z' } });
    const { effective, needRestart } = planReload(running, next);
    expect(needRestart).toEqual(['contract', 'versionDeprecation']);
    expect(effective.contract).toBe(running.contract);
    expect(effective.versionDeprecation).toBeNull();
    expect(effective.sources).toEqual(running.sources);
  });

  it('takes up a version deprecation while the list of documents stays the same', () => {
    const next = loadConfig(ENV, { versionDeprecation: { deprecatedAt: '2026-12-01T00:00:00Z' } });
    const { effective, needRestart } = planReload(running, next);
    expect(needRestart).toEqual([]);
    expect(effective.sources[0]!.deprecation).toEqual({ deprecatedAt: new Date('2026-12-01T00:00:00Z'), sunset: null, successor: null });
  });

  it('refuses a window that the running local-first sync interval no longer fits, naming the key', () => {
    const localFirst = loadConfig({ ...ENV, RATE_LIMIT_MODE: 'local-first' });
    expect(() => planReload(localFirst, loadConfig({ ...ENV, RATE_LIMIT_MODE: 'exact' }, { rateLimit: { windowMs: 600 } }))).toThrow(
      'rateLimit.windowMs: must be at least four times the running rateLimit.syncMs (250 ms) in local-first mode',
    );
  });

  it('refuses onStoreError deny while the running mode is local-first', () => {
    const localFirst = loadConfig({ ...ENV, RATE_LIMIT_MODE: 'local-first' });
    expect(() => planReload(localFirst, loadConfig({ ...ENV, RATE_LIMIT_MODE: 'exact', RATE_LIMIT_ON_STORE_ERROR: 'deny' }))).toThrow(
      /^rateLimit\.onStoreError: /,
    );
  });
});

describe('configurationHash', () => {
  it('does not depend on Redis credentials, which it must not let a log reader test', () => {
    const withPassword = (password: string) => loadConfig({ ...ENV, REDIS_URL: `redis://:${password}@127.0.0.1:6390` });
    expect(configurationHash(withPassword('first-secret'))).toBe(configurationHash(withPassword('second-secret')));
  });

  it('changes with a setting', () => {
    expect(configurationHash(loadConfig(ENV, { requests: { maxBodyBytes: 100 } }))).not.toBe(configurationHash(running));
  });
});

describe('isRestartSetting', () => {
  it.each([
    ['listen', true],
    ['listen.port', true],
    ['redis.sentinels', true],
    ['rateLimit.mode', true],
    ['rateLimit.syncMs', true],
    ['rateLimit.windowMs', false],
    ['rateLimit', false],
    ['listenQueue', false],
    ['environment', true],
    ['environments.production', true],
    ['upstream.totalTimeoutMs', false],
    ['logging.level', false],
  ])('%s only takes effect after a restart: %s', (key, expected) => {
    expect(isRestartSetting(key)).toBe(expected);
  });
});
