// planReload: what a reload takes up at once, and what waits for a restart (named, and kept as it runs).
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { planReload, RESTART_SETTINGS } from '../../../src/config/reload-plan.ts';

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
    ['listen', { PORT: '8181' }, ['listen']],
    ['the upstream address', { UPSTREAM_URL: 'http://127.0.0.1:4011/v1' }, ['upstreamUrl']],
    ['the environment', { GATEWAY_ENVIRONMENT: 'production' }, ['environment']],
    ['Redis', { REDIS_URL: 'redis://127.0.0.1:6390' }, ['redis']],
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

  it('takes up the rest of a file that also changes a restart setting', () => {
    const { effective, needRestart } = planReload(running, loadConfig({ ...ENV, PORT: '8181' }, { requests: { maxBodyBytes: 100 } }));
    expect(needRestart).toEqual(['listen']);
    expect(effective.requests.maxBodyBytes).toBe(100);
    expect(effective.listen.port).toBe(running.listen.port);
  });

  it('lists only settings the gateway has', () => {
    for (const path of RESTART_SETTINGS) {
      expect(path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], running), path).toBeDefined();
    }
  });
});
