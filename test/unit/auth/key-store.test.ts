// The authenticated caller as the stages after authentication read it.
import { describe, expect, it } from 'vitest';
import { callerOf, type Consumer } from '../../../src/auth/key-store.ts';

describe('callerOf', () => {
  it('gives the caller authentication wrote', () => {
    const caller: Consumer = { keyId: 'key_1', name: 'acme', optedIn: ['beta'] };
    expect(callerOf({ caller })).toBe(caller);
  });

  it.each([{}, { caller: undefined }])('throws, a gateway bug, when no caller was written (%o)', (record) => {
    expect(() => callerOf(record)).toThrow('no caller in the request record: a stage runs before authentication');
  });
});
