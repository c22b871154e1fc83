// Configuration: defaults, environment overrides, and start-up refusals that name the key.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';

describe('loadConfig', () => {
  it('defaults to the staging environment and its upstream', () => {
    const config = loadConfig({});
    expect(config.environment).toBe('staging');
    expect(config.upstreamBaseUrl).toBe('http://petstore-backend.petstore-staging.svc.cluster.local/v1');
    expect(config.listen.port).toBe(8080);
    expect(config.listen.adminPort).toBe(9090);
    expect(config.upstream.timeoutMs).toBe(10_000);
    expect(config.requests.maxBodyBytes).toBe(65_536);
  });

  it('selects the production upstream for GATEWAY_ENVIRONMENT=production', () => {
    const config = loadConfig({ GATEWAY_ENVIRONMENT: 'production' });
    expect(config.upstreamBaseUrl).toBe('http://petstore-backend.petstore-production.svc.cluster.local/v1');
  });

  it('lets UPSTREAM_URL override the environment\'s base address', () => {
    const config = loadConfig({ GATEWAY_ENVIRONMENT: 'production', UPSTREAM_URL: 'http://127.0.0.1:4010/v1/' });
    expect(config.upstreamBaseUrl).toBe('http://127.0.0.1:4010/v1');
  });

  it('reads PORT, ADMIN_PORT, UPSTREAM_TIMEOUT_MS and LOG_LEVEL', () => {
    const config = loadConfig({ PORT: '18080', ADMIN_PORT: '19090', UPSTREAM_TIMEOUT_MS: '2500', LOG_LEVEL: 'warn' });
    expect([config.listen.port, config.listen.adminPort, config.upstream.timeoutMs, config.logging.level]).toEqual([18080, 19090, 2500, 'warn']);
  });

  it('is frozen', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.listen)).toBe(true);
  });

  it.each([
    [{ GATEWAY_ENVIRONMENT: 'prod' }, 'GATEWAY_ENVIRONMENT (environment)'],
    [{ UPSTREAM_TIMEOUT_MS: 'ten' }, 'UPSTREAM_TIMEOUT_MS (upstream.timeoutMs)'],
    [{ UPSTREAM_TIMEOUT_MS: '-5' }, 'UPSTREAM_TIMEOUT_MS (upstream.timeoutMs)'],
    [{ PORT: '70000' }, 'PORT (listen.port)'],
    [{ UPSTREAM_URL: 'http://backend.internal/api' }, 'UPSTREAM_URL (upstreamUrl): must end with the path segment /v1'],
    [{ UPSTREAM_URL: 'ftp://backend.internal/v1' }, 'UPSTREAM_URL (upstreamUrl)'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL (logging.level)'],
  ])('stops on %o naming the key', (env, named) => {
    expect(() => loadConfig(env)).toThrow(named);
  });

  it('stops on an unknown key in the file', () => {
    expect(() => loadConfig({}, { upstream: { timeoutMillis: 5 } })).toThrow(/upstream: Unrecognized key: "timeoutMillis"/);
  });

  it('stops on a missing config file', () => {
    expect(() => loadConfig({ GATEWAY_CONFIG: '/nonexistent/gateway.yaml' })).toThrow(/config file .* could not be read/);
  });
});

describe('rate-limit modes', () => {
  it('refuses a local-first synchronisation period over a quarter of the window', () => {
    expect(() => loadConfig({ RATE_LIMIT_MODE: 'local-first', RATE_LIMIT_SYNC_MS: '20000' }, { rateLimit: { windowMs: 60_000 } })).toThrow(
      /rateLimit\.syncMs.*must be at most a quarter of rateLimit\.windowMs/,
    );
  });

  it('refuses onStoreError deny with local-first, where nothing on the request path can fail', () => {
    expect(() => loadConfig({ RATE_LIMIT_MODE: 'local-first', RATE_LIMIT_ON_STORE_ERROR: 'deny' })).toThrow(/onStoreError.*exact mode only/);
  });
});
