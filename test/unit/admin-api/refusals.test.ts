// What an admin operation's failure is answered with: the cores' refusals, Redis failing, and the gateway's own fault.
import { describe, expect, it } from 'vitest';
import { toAdminRefusal } from '../../../src/admin-api/routes.ts';
import { KeyAdminError } from '../../../src/auth/key-admin.ts';

describe('toAdminRefusal', () => {
  it('answers a key that does not exist 404 with the core message', () => {
    const refusal = toAdminRefusal(new KeyAdminError('not_found', 'no key with id key_x'));
    expect({ code: refusal.code, status: refusal.status, message: refusal.message }).toEqual({
      code: 'not_found',
      status: 404,
      message: 'no key with id key_x',
    });
  });

  it('answers a Redis failure 503 with Retry-After', () => {
    const refusal = toAdminRefusal(new Error('Connection is closed.'));
    expect({ code: refusal.code, status: refusal.status }).toEqual({ code: 'service_unavailable', status: 503 });
    expect(refusal.headers).toHaveProperty('Retry-After');
  });

  it("answers a fault of the gateway's own code 500, not as Redis's", () => {
    const refusal = toAdminRefusal(new TypeError("Cannot read properties of undefined (reading 'id')"));
    expect({ code: refusal.code, status: refusal.status }).toEqual({ code: 'internal_error', status: 500 });
  });
});
