// timed: each command reported once as it settles, its result or error passed on unchanged.
import { describe, expect, it } from 'vitest';
import { timed } from '../../../src/redis/command-timing.ts';

function recorder() {
  const calls: Array<{ seconds: number; failed: boolean }> = [];
  return { calls, observe: (seconds: number, failed: boolean) => void calls.push({ seconds, failed }) };
}

describe('timed', () => {
  it('reports a command that answered, once, as not failed, and passes its reply on', async () => {
    const { calls, observe } = recorder();
    await expect(timed(observe, async () => 'PONG')).resolves.toBe('PONG');
    expect(calls).toEqual([{ seconds: expect.any(Number), failed: false }]);
    expect(calls[0]!.seconds).toBeGreaterThanOrEqual(0);
  });

  it('reports a command that failed, once, as failed, and passes its error on', async () => {
    const { calls, observe } = recorder();
    const error = new Error('Command timed out');
    await expect(timed(observe, () => Promise.reject(error))).rejects.toBe(error);
    expect(calls).toEqual([{ seconds: expect.any(Number), failed: true }]);
  });

  it('reports nothing before the command settles', async () => {
    const { calls, observe } = recorder();
    let answer: (value: string) => void = () => undefined;
    const pending = timed(observe, () => new Promise<string>((resolve) => (answer = resolve)));
    await Promise.resolve();
    expect(calls).toEqual([]);
    answer('OK');
    await pending;
    expect(calls).toHaveLength(1);
  });

  it('without an observer, returns the command’s own promise', () => {
    const reply = Promise.resolve(1);
    expect(timed(undefined, () => reply)).toBe(reply);
  });
});
