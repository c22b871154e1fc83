// The access log's level per answer: decided refusals warn, gateway bugs are errors.
import { describe, expect, it } from 'vitest';
import { accessLogLevel } from '../../../src/observability/logger.ts';

describe('accessLogLevel', () => {
  it.each([
    [200, 'info'],
    [201, 'info'],
    [401, 'info'],
    [429, 'info'],
    [499, 'info'],
    [500, 'error'],
    [501, 'error'],
    [502, 'warn'],
    [503, 'warn'],
    [504, 'warn'],
    [505, 'error'],
  ])('%i is logged at %s', (status, level) => {
    expect(accessLogLevel(status)).toBe(level);
  });
});
