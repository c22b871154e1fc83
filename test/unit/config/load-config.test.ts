// Configuration: defaults, environment overrides, and start-up refusals that name the key.
import { describe, expect, it } from 'vitest';
import { ConfigError, deepFreeze, loadConfig } from '../../../src/config/load-config.ts';

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

  it("lets UPSTREAM_URL override the environment's base address", () => {
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

  it.each([
    ['80a', 'PORT'],
    ['80.5', 'PORT'],
    ['70000', 'PORT'],
    ['-1', 'ADMIN_PORT'],
  ])('says in words what %s for %s should be, blaming the variable, not the file', (value, variable) => {
    const key = variable === 'PORT' ? 'listen.port' : 'listen.adminPort';
    expect(() => loadConfig({ [variable]: value })).toThrow(
      new ConfigError(`invalid environment variable ${variable} (${key}): must be an integer port number (0 to 65535)`),
    );
  });

  it('says a number is expected where a word was given', () => {
    expect(() => loadConfig({}, { listen: { maxConnections: 'many' } })).toThrow(/listen\.maxConnections: must be a number$/);
  });

  it("lists the variables' problems and the file's apart, each under its source", () => {
    let message = '';
    try {
      loadConfig({ PORT: 'http', LOG_LEVEL: 'loud' }, { upstream: { timeoutMillis: 5 } });
    } catch (error) {
      message = (error as Error).message;
    }
    const [env, port, level, file, ...rest] = message.split('\n');
    expect([env, port, level]).toEqual([
      'invalid environment variables:',
      '  PORT (listen.port): must be an integer port number (0 to 65535)',
      expect.stringMatching(/^ {2}LOG_LEVEL \(logging\.level\): /),
    ]);
    // A single problem from the file stays on one line.
    expect(file).toMatch(/^invalid configuration in \/\S+\/config\/gateway\.yaml: upstream: Unrecognized key: "timeoutMillis"$/);
    expect(rest).toEqual([]);
  });

  it('binds the admin listener to loopback unless ADMIN_HOST says otherwise', () => {
    expect(loadConfig({}).listen.adminHost).toBe('127.0.0.1');
    expect(loadConfig({ ADMIN_HOST: '0.0.0.0' }).listen.adminHost).toBe('0.0.0.0');
    expect(loadConfig({}).listen.host).toBe('0.0.0.0');
  });

  it('stops on an unknown key in the file', () => {
    expect(() => loadConfig({}, { upstream: { timeoutMillis: 5 } })).toThrow(/upstream: Unrecognized key: "timeoutMillis"/);
  });

  it('blames a list variable for a bad item in it, not the file', () => {
    expect(() => loadConfig({ REDIS_SENTINELS: '10.0.0.1:abc' })).toThrow(
      'invalid environment variable REDIS_SENTINELS (redis.sentinels.0): must be host:port',
    );
  });

  it('says an upstream address that is no URL is not one, without a stack of its own', () => {
    let error: unknown;
    try {
      loadConfig({ UPSTREAM_URL: 'notaurl' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'invalid environment variable UPSTREAM_URL (upstreamUrl): must be an http:// or https:// URL ending in /v1, such as http://petstore-backend.internal/v1',
    );
  });

  it('reads ADMIN_HOST without the spaces around it', () => {
    expect(loadConfig({ ADMIN_HOST: ' 0.0.0.0 ' }).listen.adminHost).toBe('0.0.0.0');
  });

  it('stops on a missing config file, naming GATEWAY_CONFIG', () => {
    expect(() => loadConfig({ GATEWAY_CONFIG: '/nonexistent/gateway.yaml' })).toThrow(
      new ConfigError('GATEWAY_CONFIG: config file /nonexistent/gateway.yaml could not be read (ENOENT)'),
    );
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

describe('deepFreeze', () => {
  const at = new Date('2032-01-01T00:00:00Z');
  const frozen = deepFreeze({ listen: { port: 8080 }, limits: [{ operation: 'listPets' }], sunset: at, name: 'gateway' });

  it('returns the value it froze', () => {
    const value = { a: 1 };
    expect(deepFreeze(value)).toBe(value);
  });

  it.each([
    ['the object itself', frozen, true],
    ['a nested object', frozen.listen, true],
    ['an array', frozen.limits, true],
    ['an object in an array', frozen.limits[0], true],
    ['a Date (left writable: freezing one does not stop setTime)', frozen.sunset, false],
  ])('freezes %s: %s', (_case, value, isFrozen) => {
    expect(Object.isFrozen(value)).toBe(isFrozen);
  });

  it.each([null, undefined, 7, 'text'])('passes %s through', (value) => {
    expect(deepFreeze(value)).toBe(value);
  });
});
