// What a process prints when it cannot start, row by row: a setting's one line, or a bug's stack.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load-config.ts';
import { SigningKeyError } from '../../src/identity/signing-key.ts';
import { ListenError } from '../../src/server/server.ts';
import { startupFailureMessage } from '../../src/startup-failure.ts';
import { TracingSettingError } from '../../src/tracing/from-environment.ts';

const bug = new TypeError('x is undefined');

describe('startupFailureMessage', () => {
  it.each([
    ['a bad setting', new ConfigError('PORT (listen.port): must be a number'), 'PORT (listen.port): must be a number'],
    ['an unreadable key file', new SigningKeyError('unreadable', 'upstreamIdentity.keyFile: cannot be read'), 'upstreamIdentity.keyFile: cannot be read'],
    ['a busy port', new ListenError('PORT (listen.port): 127.0.0.1:8080 is already in use'), 'PORT (listen.port): 127.0.0.1:8080 is already in use'],
    ['an OpenTelemetry variable', new TracingSettingError('OTEL_TRACES_SAMPLER: "x" is not supported'), 'OTEL_TRACES_SAMPLER: "x" is not supported'],
    ['any other error (a bug), with its stack', bug, bug.stack],
    ['a thrown non-error', 'just a string', 'just a string'],
  ])('%s', (_case, error, message) => {
    expect(startupFailureMessage(error)).toBe(message);
  });

  it('falls back to the message of an error without a stack', () => {
    const stackless = Object.assign(new Error('no stack'), { stack: undefined });
    expect(startupFailureMessage(stackless)).toBe('no stack');
  });
});
