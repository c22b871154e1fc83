// The shadow report's range as operators give it: days and date-times, defaults, and the refusals, each naming what is wrong.
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.ts';
import { checkShadowReportQuery } from '../../../src/shadow/report-query.ts';

const NOW = Date.parse('2030-03-14T12:30:00Z');
const reader = { retentionDays: 2, now: () => NOW };
const at = (text: string) => Date.parse(text);

function refusal(input: Parameters<typeof checkShadowReportQuery>[0]): string {
  try {
    checkShadowReportQuery(input, reader);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('invalid_request');
    return (error as Error).message;
  }
  throw new Error('not refused');
}

describe('checkShadowReportQuery', () => {
  it('reads the last day up to now when neither end is given', () => {
    expect(checkShadowReportQuery({}, reader)).toEqual({ from: NOW - 86_400_000, to: NOW });
  });

  it('takes a day as from at its midnight and as to whole, and date-times with their offsets', () => {
    expect(checkShadowReportQuery({ from: '2030-03-13', to: '2030-03-13' }, reader)).toEqual({
      from: at('2030-03-13T00:00:00Z'),
      to: at('2030-03-14T00:00:00Z'),
    });
    expect(checkShadowReportQuery({ from: '2030-03-14T09:15:00+02:00', to: '2030-03-14T10:00:00.5Z', operation: 'getPet' }, reader)).toEqual({
      from: at('2030-03-14T07:15:00Z'),
      to: at('2030-03-14T10:00:00.500Z'),
      operation: 'getPet',
    });
  });

  it('takes a range as long as the retention, and refuses one a millisecond longer', () => {
    expect(checkShadowReportQuery({ from: '2030-03-13', to: '2030-03-14' }, reader).to).toBe(at('2030-03-15T00:00:00Z'));
    expect(refusal({ from: '2030-03-12T23:59:59.999Z', to: '2030-03-14' })).toBe(
      'The range may span at most 2 days (shadow.report.retentionDays): older hours are not kept',
    );
  });

  it.each([
    [{ from: '2030-02-30' }, "Query parameter 'from' must be an RFC 3339 date-time (2026-11-28T09:00:00Z) or a UTC day (2026-11-28)"],
    [{ to: 'yesterday' }, "Query parameter 'to' must be an RFC 3339 date-time (2026-11-28T09:00:00Z) or a UTC day (2026-11-28)"],
    [{ to: '2030-03-14T25:00:00Z' }, "Query parameter 'to' must be an RFC 3339 date-time (2026-11-28T09:00:00Z) or a UTC day (2026-11-28)"],
    [{ from: '2030-03-14T12:00:00Z', to: '2030-03-14T12:00:00Z' }, "Query parameter 'from' must be before 'to'"],
    [{ operation: 'get pet' }, "Query parameter 'operation' must be an operationId of the interface document"],
  ])('refuses %j', (input, message) => {
    expect(refusal(input)).toBe(message);
  });
});
