// Variables with the gateway's prefixes that name no setting, and NODE_ENV=production without an environment: start-up faults.
import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_KEYS, KNOWN_VARIABLES, loadConfig } from '../../../src/config/load-config.ts';
import { prefixesOf } from '../../../src/config/unknown-variables.ts';

const messageOf = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  return 'nothing thrown';
};

describe('unknown environment variables', () => {
  it('refuses a misspelt variable, naming the closest known one', () => {
    expect(messageOf(() => loadConfig({ GATEWAY_ENVIROMENT: 'production' }))).toBe(
      'invalid environment variable GATEWAY_ENVIROMENT: not a setting of the gateway (did you mean GATEWAY_ENVIRONMENT?); docs/configuration.md lists every variable',
    );
  });

  it.each([
    ['UPSTREAM_TIMEOUT', 'UPSTREAM_TIMEOUT_MS'],
    ['RATE_LIMIT_WINDOW', 'RATE_LIMIT_WINDOW_MS'],
    ['API_KEY_PEPER', 'API_KEY_PEPPER'],
    ['TLS_CERT', 'TLS_CERT_FILE'],
    ['CORS_ALLOWED_ORIGIN', 'CORS_ALLOWED_ORIGINS'],
    ['CERTIFICATE_WATCH_INTERVAL_MS', 'CERTIFICATE_WATCH_MS'],
    ['REDIS_URI', 'REDIS_URL'],
    ['ADMIN_PROT', 'ADMIN_PORT'],
  ])('refuses %s (did you mean %s?)', (name, closest) => {
    expect(messageOf(() => loadConfig({ [name]: 'x' }))).toContain(`${name}: not a setting of the gateway (did you mean ${closest}?)`);
  });

  it('lists every unknown variable with the schema faults in one message', () => {
    const message = messageOf(() => loadConfig({ GATEWAY_ENVIROMENT: 'production', PORT: 'http', REDIS_URI: 'redis://x' }));
    expect(message.split('\n')).toEqual([
      'invalid environment variables:',
      expect.stringMatching(/^ {2}GATEWAY_ENVIROMENT: /),
      expect.stringMatching(/^ {2}REDIS_URI: /),
      '  PORT (listen.port): must be an integer port number (0 to 65535)',
    ]);
  });

  it("leaves alone what Kubernetes and Docker links set for a Service named like a prefix, and other programs' variables", () => {
    const env = {
      REDIS_SERVICE_HOST: '10.0.0.7',
      REDIS_SERVICE_PORT: '6379',
      REDIS_PORT: 'tcp://10.0.0.7:6379',
      REDIS_PORT_6379_TCP_ADDR: '10.0.0.7',
      NODE_OPTIONS: '--enable-source-maps',
      OTEL_SERVICE_NAME: 'gateway',
    };
    expect(loadConfig(env).environment).toBe('staging');
  });

  it('takes its prefixes from the variables it knows, so a setting added later brings its own', () => {
    expect(prefixesOf(KNOWN_VARIABLES)).toEqual(
      expect.arrayContaining(['GATEWAY_', 'UPSTREAM_', 'ADMIN_', 'TLS_', 'API_KEY_', 'RATE_LIMIT_', 'CONTRACT_', 'CORS_', 'REDIS_', 'CERTIFICATE_']),
    );
    expect(prefixesOf(['WIDGET_COLOUR', 'WIDGET_SIZE_MAX'])).toEqual(['WIDGET_']);
    for (const name of Object.keys(ENV_KEYS)) expect(() => loadConfig({ [name]: '' })).not.toThrow();
  });
});

describe('NODE_ENV=production', () => {
  it('refuses to start without GATEWAY_ENVIRONMENT: it would serve staging', () => {
    expect(messageOf(() => loadConfig({ NODE_ENV: 'production' }))).toMatch(
      /^invalid environment variable GATEWAY_ENVIRONMENT: not set while NODE_ENV is production/,
    );
  });

  it('starts when GATEWAY_ENVIRONMENT or the file names the environment', () => {
    expect(loadConfig({ NODE_ENV: 'production', GATEWAY_ENVIRONMENT: 'staging' }).environment).toBe('staging');
    expect(loadConfig({ NODE_ENV: 'production' }, { environment: 'production' }).environment).toBe('production');
  });
});
