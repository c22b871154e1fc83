// The deprecation report as the admin listener serves it: read from the store at most once per interval, however many ask.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../time/clock.ts';
import type { DeprecatedCallRow } from './deprecated-calls.ts';

export interface CachedDeprecationReportOptions {
  /** How old a report may be when served: the counts reach the store once a flush interval anyway. */
  maxAgeMs: number;
  clock: Clock;
}

/** A report read once and shared by every caller until it is `maxAgeMs` old; a failed read is not kept. */
export type CachedDeprecationReport = () => Promise<readonly DeprecatedCallRow[]>;

/**
 * Reading the report costs the store a read of every caller's counts (2 MB with 25,000 callers): one
 * read serves every request of its interval, and concurrent requests share the read under way
 * (lru-cache's fetch is single-flight).
 */
export function cacheDeprecationReport(read: () => Promise<readonly DeprecatedCallRow[]>, options: CachedDeprecationReportOptions): CachedDeprecationReport {
  const cache = new LRUCache<'report', readonly DeprecatedCallRow[]>({
    max: 1,
    ttl: options.maxAgeMs,
    perf: options.clock,
    fetchMethod: () => read(),
  });
  return async function cachedReport() {
    const rows = await cache.fetch('report');
    // fetchMethod never resolves undefined: a failed read rejects.
    return rows!;
  };
}
