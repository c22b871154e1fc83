// Usage as operators read it (GET /admin/usage, npm run keys -- usage): a checked query, rows by day or month, JSON or CSV.
import { GatewayError } from '../errors/gateway-error.ts';
import { USAGE_OUTCOMES, type UsageCount, type UsageStore } from './usage.ts';
import { DAY, dayAt } from '../time/calendar-day.ts';

export const USAGE_GRANULARITIES = ['day', 'month'] as const;
export type UsageGranularity = (typeof USAGE_GRANULARITIES)[number];

/** A question asked of the usage counts: UTC days, both included. */
export interface UsageQuery {
  from: string;
  to: string;
  keyId?: string;
  granularity: UsageGranularity;
}

/** A row of the report, as the admin API and `npm run keys -- usage --json` give it (an interface: keep it). */
export interface UsageRow {
  /** `YYYY-MM-DD`, or `YYYY-MM` by month. */
  period: string;
  keyId: string;
  consumer: string;
  operation: string;
  admitted: number;
  refusedQuota: number;
  refusedRateLimit: number;
}

/** How a refusal names a parameter, in full and once named: the admin API's query parameters, or the CLI's options (`--from`). */
export interface ParameterNames {
  full: (name: 'from' | 'to' | 'granularity') => string;
  short: (name: 'from' | 'to' | 'granularity') => string;
}
const QUERY_PARAMETERS: ParameterNames = { full: (name) => `Query parameter '${name}'`, short: (name) => `'${name}'` };

/** Why `text` is no UTC day: not written as one, or a date the calendar lacks (2026-02-30). */
function dayProblem(text: string | undefined): string {
  return text !== undefined && DAY.test(text) ? `is no such day (${text}): give a real UTC day, YYYY-MM-DD` : 'must be a UTC day, YYYY-MM-DD';
}

/**
 * The query the parameters ask, or a 400 naming what is wrong: real days, `from` not after `to`, a range no longer
 * than the days kept (`retentionDays`: older ones are gone, and a longer range would only read empty days).
 */
export function checkUsageQuery(
  input: { from?: string; to?: string; keyId?: string; granularity?: string },
  retentionDays: number,
  named: ParameterNames = QUERY_PARAMETERS,
): UsageQuery {
  const { from, to, keyId, granularity = 'day' } = input;
  const fromAt = from === undefined ? undefined : dayAt(from);
  const toAt = to === undefined ? undefined : dayAt(to);
  if (fromAt === undefined) throw new GatewayError('invalid_request', `${named.full('from')} ${dayProblem(from)}`);
  if (toAt === undefined) throw new GatewayError('invalid_request', `${named.full('to')} ${dayProblem(to)}`);
  if (fromAt > toAt) throw new GatewayError('invalid_request', `${named.full('from')} must not be after ${named.short('to')}`);
  if ((toAt - fromAt) / 86_400_000 + 1 > retentionDays)
    throw new GatewayError('invalid_request', `The range may span at most ${retentionDays} days (usage.retentionDays): older days are not kept`);
  if (!(USAGE_GRANULARITIES as readonly string[]).includes(granularity))
    throw new GatewayError('invalid_request', `${named.full('granularity')} must be day or month`);
  return { from: from!, to: to!, ...(keyId === undefined ? {} : { keyId }), granularity: granularity as UsageGranularity };
}

/** The UTC days from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let at = dayAt(from)!; at <= dayAt(to)!; at += 86_400_000) days.push(new Date(at).toISOString().slice(0, 10));
  return days;
}

/** The counts as rows by period, key and operation, in that order; by month, a month's days added up (the latest consumer name kept). */
export function toUsageRows(counts: readonly UsageCount[], granularity: UsageGranularity): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const ordered = [...counts].sort((a, b) => a.day.localeCompare(b.day));
  for (const count of ordered) {
    const period = granularity === 'month' ? count.day.slice(0, 7) : count.day;
    const key = `${period}\n${count.keyId}\n${count.operation}`;
    const row = rows.get(key);
    if (row === undefined) {
      rows.set(key, { period, keyId: count.keyId, consumer: count.consumer, operation: count.operation, admitted: 0, refusedQuota: 0, refusedRateLimit: 0 });
    } else {
      row.consumer = count.consumer;
    }
    const target = rows.get(key)!;
    for (const outcome of USAGE_OUTCOMES) target[outcome] += count[outcome];
  }
  return [...rows.values()].sort((a, b) => a.period.localeCompare(b.period) || a.keyId.localeCompare(b.keyId) || a.operation.localeCompare(b.operation));
}

/** The report the query asks, across replicas. */
export async function readUsageReport(store: UsageStore, query: UsageQuery): Promise<UsageRow[]> {
  return toUsageRows(await store.read(query.from, query.to, query.keyId), query.granularity);
}

/** The CSV columns, in this order (an interface: keep it). */
export const USAGE_CSV_COLUMNS = ['period', 'keyId', 'consumer', 'operation', 'admitted', 'refusedQuota', 'refusedRateLimit'] as const;

/**
 * A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break, its quotes doubled. A text
 * a spreadsheet would run as a formula (a consumer named `=HYPERLINK(…)`) is written after a `'`, as OWASP advises.
 */
function csvField(value: string | number): string {
  const text = typeof value === 'string' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** RFC 4180: a header line, then one line per row, each ended by CRLF. */
export function toUsageCsv(rows: readonly UsageRow[]): string {
  const lines = [USAGE_CSV_COLUMNS.join(','), ...rows.map((row) => USAGE_CSV_COLUMNS.map((column) => csvField(row[column])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}
