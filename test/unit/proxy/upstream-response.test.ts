// Which backend answers refuse the gateway itself (its identity token) rather than the client, row by row.
import { describe, expect, it } from 'vitest';
import { refusesTheGateway } from '../../../src/proxy/upstream-response.ts';

describe('refusesTheGateway', () => {
  it.each([
    [401, true],
    [403, true],
    [400, false],
    [404, false],
    [407, false],
    [500, false],
    [200, false],
  ])('a backend %i: %s', (status, expected) => {
    expect(refusesTheGateway(status)).toBe(expected);
  });
});
