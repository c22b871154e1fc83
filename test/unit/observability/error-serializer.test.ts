// The logger writes errors as pino does, but never a Redis command's arguments: on the error, its fields, its aggregated and nested errors.
import { ReplyError } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.ts';
import { createLogger } from '../../../src/observability/logger.ts';

const ARGS = ['petstore:key:3f9a2c-stored-hash', 'field-key-id', 'key-id-0001', 'field-consumer', 'acme-consumer-name'];

/** An error as ioredis rejects a command with: Redis's reply, and the command it answered. */
function redisError(message = 'NOREPLICAS Not enough good replicas to write.', name = 'hset'): Error {
  const error = new ReplyError(message);
  Object.assign(error, { command: { name, args: [...ARGS] } });
  return error;
}

/** The `err` of the line `logger.error({ err }, ...)` writes through the gateway's logger (or `logger`). */
function logged(err: unknown, make = (write: { write(line: string): void }) => createLogger('info', write)): Record<string, unknown> {
  const lines: string[] = [];
  make({ write: (line) => void lines.push(line) }).error({ err }, 'failed');
  expect(lines).toHaveLength(1);
  for (const arg of ARGS) expect(lines[0]).not.toContain(arg);
  return (JSON.parse(lines[0]!) as { err: Record<string, unknown> }).err;
}

describe("the logger's err serializer", () => {
  it('writes an error without a command exactly as pino does', () => {
    const error = new GatewayError('service_unavailable', 'Redis did not answer; retry shortly', { cause: new Error('connection lost') });
    Object.assign(error, { attempt: 2, detail: { where: 'admin' } });
    const lines: string[] = [];
    pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }).error({ err: error }, 'failed');
    const oracle = (JSON.parse(lines[0]!) as { err: unknown }).err;
    expect(logged(error)).toEqual(oracle);
  });

  it("keeps a Redis error's command name and leaves out its arguments", () => {
    const err = logged(redisError());
    expect(err.command).toEqual({ name: 'hset' });
    expect(err.message).toBe('NOREPLICAS Not enough good replicas to write.');
    expect(err.type).toBe('ReplyError');
  });

  it("leaves out the arguments of a cause's command: pino writes only the cause's message and stack", () => {
    const err = logged(new GatewayError('service_unavailable', 'Redis did not answer; retry shortly', { cause: redisError() }));
    expect(err.message).toBe('Redis did not answer; retry shortly: NOREPLICAS Not enough good replicas to write.');
    expect(err.command).toBeUndefined();
  });

  it('leaves out the arguments in an AggregateError and in the errors nested in its errors', () => {
    const err = logged(new AggregateError([redisError(), new AggregateError([redisError('READONLY', 'set')])], 'every node failed'));
    expect(err.aggregateErrors).toMatchObject([{ command: { name: 'hset' } }, { aggregateErrors: [{ command: { name: 'set' } }] }]);
  });

  it("leaves out the arguments of a failed transaction's previous errors, an enumerable errors list and an error in a field", () => {
    const exec = new ReplyError('EXECABORT Transaction discarded because of previous errors.');
    Object.assign(exec, { command: { name: 'exec', args: [] }, previousErrors: [redisError()], errors: [redisError()], lastNodeError: redisError() });
    const err = logged(exec);
    expect(err.command).toEqual({ name: 'exec' });
    expect(err.previousErrors).toMatchObject([{ type: 'ReplyError', command: { name: 'hset' } }]);
    expect(err.errors).toMatchObject([{ command: { name: 'hset' } }]);
    expect(err.lastNodeError).toMatchObject({ command: { name: 'hset' } });
  });

  it('leaves out the arguments of a command in a cause that is not an error', () => {
    const err = logged(Object.assign(new Error('failed'), { cause: { reply: 'NOREPLICAS', command: { name: 'hset', args: [...ARGS] } } }));
    expect(err.cause).toEqual({ reply: 'NOREPLICAS', command: { name: 'hset' } });
  });

  it('writes an error that refers to itself, or is not an error at all', () => {
    const looped = Object.assign(redisError(), { self: {} as Record<string, unknown> });
    looped.self.back = looped;
    expect(logged(looped).command).toEqual({ name: 'hset' });
    expect(logged('a string reason')).toBe('a string reason');
    expect(logged({ command: { name: 'get', args: [...ARGS] } })).toEqual({ command: { name: 'get' } });
  });

  it('applies to an error logged as the first argument, which pino writes under err', () => {
    const lines: string[] = [];
    createLogger('info', { write: (line: string) => void lines.push(line) }).error(redisError(), 'failed');
    for (const arg of ARGS) expect(lines[0]).not.toContain(arg);
    expect((JSON.parse(lines[0]!) as { err: unknown }).err).toMatchObject({ type: 'ReplyError', command: { name: 'hset' } });
  });

  it('applies to the access log child too, which keeps every serializer', async () => {
    const { accessLogger } = await import('../../../src/observability/logger.ts');
    expect(logged(redisError(), (write) => accessLogger(createLogger('info', write))).command).toEqual({ name: 'hset' });
  });
});
