// The shadow report as operators ask for it (GET /admin/shadow/report, npm run shadow -- report): a checked range of hours.
import { GatewayError } from '../errors/gateway-error.ts';
import type { ShadowReportBody, ShadowReportQuery } from './report-model.ts';
import { dayAt } from '../time/calendar-day.ts';

const DAY_MS = 86_400_000;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** Without `from`: the day before `to`. */
export const DEFAULT_RANGE_MS = DAY_MS;

/** What the admin route and the CLI read the report with: a report store, its retention and the gateway's clock. */
export interface ShadowReportReader {
  /** The days kept (`shadow.report.retentionDays`): the longest range a query may ask. */
  readonly retentionDays: number;
  now(): number;
  read(query: ShadowReportQuery): Promise<ShadowReportBody>;
}

/**
 * An instant as the query gives it: an RFC 3339 date-time, or a UTC day, `YYYY-MM-DD`, which starts at its midnight
 * as `from` and, as `to`, is included whole (it ends at the next midnight).
 */
function instantOf(text: string, as: 'from' | 'to'): number | undefined {
  const day = dayAt(text);
  if (day !== undefined) return as === 'from' ? day : day + DAY_MS;
  const match = DATE_TIME.exec(text);
  if (!match || dayAt(match[1]!) === undefined) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}

/** How a refusal names a parameter, in full and once named: the admin API's query parameters, or the CLI's options (`--from`). */
export interface ParameterNames {
  full: (name: 'from' | 'to' | 'operation') => string;
  short: (name: 'from' | 'to' | 'operation') => string;
}
const QUERY_PARAMETERS: ParameterNames = { full: (name) => `Query parameter '${name}'`, short: (name) => `'${name}'` };

const FORMS = 'an RFC 3339 date-time (2026-11-28T09:00:00Z) or a UTC day (2026-11-28)';

/** An operationId as documents spell them; anything else could not have been compared. */
const OPERATION = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * The query the parameters ask, or a 400 naming what is wrong. Defaults: `to` now, `from` a day before `to`. The
 * range must be non-empty and no longer than the days kept (older hours are gone: a longer range only reads nothing).
 */
export function checkShadowReportQuery(
  input: { from?: string | undefined; to?: string | undefined; operation?: string | undefined },
  reader: Pick<ShadowReportReader, 'retentionDays' | 'now'>,
  named: ParameterNames = QUERY_PARAMETERS,
): ShadowReportQuery {
  const to = input.to === undefined ? reader.now() : instantOf(input.to, 'to');
  if (to === undefined) throw new GatewayError('invalid_request', `${named.full('to')} must be ${FORMS}`);
  const from = input.from === undefined ? to - DEFAULT_RANGE_MS : instantOf(input.from, 'from');
  if (from === undefined) throw new GatewayError('invalid_request', `${named.full('from')} must be ${FORMS}`);
  if (from >= to) throw new GatewayError('invalid_request', `${named.full('from')} must be before ${named.short('to')}`);
  if (to - from > reader.retentionDays * DAY_MS)
    throw new GatewayError(
      'invalid_request',
      `The range may span at most ${reader.retentionDays} days (shadow.report.retentionDays): older hours are not kept`,
    );
  if (input.operation !== undefined && !OPERATION.test(input.operation))
    throw new GatewayError('invalid_request', `${named.full('operation')} must be an operationId of the interface document`);
  return { from, to, ...(input.operation === undefined ? {} : { operation: input.operation }) };
}
