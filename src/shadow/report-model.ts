// The shadow report's counts as stores keep them (hourly buckets, learnt noise) and as operators read them (noise apart).
import { isLearntNoise, noiseIndex } from './noise-book.ts';
import type { DifferenceKind, ShadowResult } from './shadow-outcome.ts';

/** The result labels, in the order the report lists them (petstore_gateway_shadow_comparisons_total's `result`). */
export const SHADOW_RESULTS = ['match', 'differ', 'staging_error', 'staging_off_contract', 'skipped'] as const satisfies readonly ShadowResult[];

/** The kinds a difference may have: what a store accepts from a batch, whatever else the batch says. */
export const DIFFERENCE_KINDS = ['missing', 'extra', 'type', 'value', 'order', 'status', 'header'] as const satisfies readonly DifferenceKind[];

/** A report's buckets are hours: `from` and `to` select them. */
export const BUCKET_MS = 3_600_000;

/**
 * The most pointers listed per operation, bucket and list (differences, noise), and learnt noise pointers per
 * operation: past it, a new pointer's occurrences are counted as `unlisted`, never stored. Bounds Redis and memory
 * whatever a staging backend answers (a body with a thousand generated member names).
 */
export const MAX_POINTERS = 200;

/** Longest a pointer may be to be listed: a longer one is counted as unlisted (a pathological member name). */
export const MAX_POINTER_LENGTH = 512;

/** One pointer's tally in one bucket: in how many comparisons it differed, and when first and last (epoch ms). */
export interface PointerTally {
  pointer: string;
  kind: DifferenceKind;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/** One operation's comparisons in one hour, as every replica adds them up. */
export interface ShadowBucket {
  /** The hour's start, epoch ms. */
  hour: number;
  operation: string;
  results: Partial<Record<ShadowResult, number>>;
  differences: PointerTally[];
  /** Differences at pointers known as noise when they were compared. */
  noise: PointerTally[];
  /** Occurrences not listed: the bucket's pointer cap was reached, or the pointer was too long. */
  unlisted: number;
}

/**
 * A difference between two production answers: noise for its operation at that pointer by that kind, kept with the
 * retention. No kind: learnt by a build that kept none (before a rolling deploy), noise of every kind there.
 */
export interface LearntNoise {
  operation: string;
  pointer: string;
  kind?: DifferenceKind | undefined;
  sightings: number;
  firstSeen: number;
  lastSeen: number;
}

/** What a flush adds, and what a store reads back. */
export interface ShadowCounts {
  buckets: ShadowBucket[];
  learnt: LearntNoise[];
}

/** Where every replica's counts add up: Redis in production (src/shadow/report-redis.ts), memory without it. */
export interface ShadowReportStore {
  /** Adds a flush's counts; a batch whose `batchId` the store has already added adds nothing again. */
  add(counts: ShadowCounts, batchId: string): Promise<void>;
  /** The buckets of these hours (of one operation or all), and the noise learnt for the operations they hold. */
  read(hours: readonly number[], operation?: string): Promise<ShadowCounts>;
}

/** A question asked of the report: the hours that overlap [from, to) (epoch ms), of one operation or of all. */
export interface ShadowReportQuery {
  from: number;
  to: number;
  operation?: string;
}

/** A pointer as the report lists it (an interface: GET /admin/shadow/report and `npm run shadow -- report --json`). */
export interface ReportedPointer {
  pointer: string;
  kind: DifferenceKind;
  /** Comparisons in which it differed. */
  count: number;
  firstSeen: string;
  lastSeen: string;
}

export interface ReportedNoise {
  pointer: string;
  /** The kind production differed from itself by; absent for noise learnt by a build that kept no kind (any kind). */
  kind?: DifferenceKind;
  /** Times two production answers to one request differed at it. */
  sightings: number;
  firstSeen: string;
  lastSeen: string;
}

/** One operation's part of the report. */
export interface OperationReport {
  operation: string;
  results: Record<ShadowResult, number>;
  /** Comparisons made: every result but `skipped`. */
  comparisons: number;
  /** Pointers where staging differed from production and production from itself did not, most frequent first. */
  differences: ReportedPointer[];
  /** Differences at pointers that are noise (learnt, or listed by operators), most frequent first. */
  noise: ReportedPointer[];
  /** The pointers learnt as noise for this operation, within the retention (not only the range). */
  learntNoise: ReportedNoise[];
  /** Differences not listed (the per-hour pointer cap was reached). */
  unlisted: number;
}

/** The report: the hours covered (whole hours, UTC) and each operation compared in them. */
export interface ShadowReportBody {
  from: string;
  to: string;
  operations: OperationReport[];
}

/** The hours overlapping [from, to): the start of each. */
export function hoursOf(from: number, to: number): number[] {
  const hours: number[] = [];
  for (let hour = Math.floor(from / BUCKET_MS) * BUCKET_MS; hour < to; hour += BUCKET_MS) hours.push(hour);
  return hours;
}

/** Adds `tally` into `into` (by kind and pointer): counts add up, first and last seen widen. */
export function mergeTally(into: Map<string, PointerTally>, tally: PointerTally): void {
  const key = `${tally.kind}|${tally.pointer}`;
  const existing = into.get(key);
  if (existing === undefined) {
    into.set(key, { ...tally });
    return;
  }
  existing.count += tally.count;
  existing.firstSeen = Math.min(existing.firstSeen, tally.firstSeen);
  existing.lastSeen = Math.max(existing.lastSeen, tally.lastSeen);
}

/**
 * Adds `tally` as `mergeTally` does, if its pointer is already listed or the list holds fewer than MAX_POINTERS
 * (and the pointer is not too long); answers false, adding nothing, otherwise: the caller counts it as unlisted.
 */
export function mergeCapped(into: Map<string, PointerTally>, tally: PointerTally): boolean {
  if (tally.pointer.length > MAX_POINTER_LENGTH) return false;
  if (into.size >= MAX_POINTERS && !into.has(`${tally.kind}|${tally.pointer}`)) return false;
  mergeTally(into, tally);
  return true;
}

const iso = (at: number) => new Date(at).toISOString();
const byCount = (a: PointerTally, b: PointerTally) => b.count - a.count || a.pointer.localeCompare(b.pointer) || a.kind.localeCompare(b.kind);
const reported = (tally: PointerTally): ReportedPointer => ({
  pointer: tally.pointer,
  kind: tally.kind,
  count: tally.count,
  firstSeen: iso(tally.firstSeen),
  lastSeen: iso(tally.lastSeen),
});

/**
 * The report from a store's counts: per operation, the buckets added up, and a difference at a pointer learnt as
 * noise since it was recorded listed under noise, not under differences (noise is decided at read time too).
 */
export function assembleReport(counts: ShadowCounts, query: ShadowReportQuery): ShadowReportBody {
  const hours = hoursOf(query.from, query.to);
  const operations = new Map<
    string,
    { results: Record<ShadowResult, number>; differences: Map<string, PointerTally>; noise: Map<string, PointerTally>; unlisted: number }
  >();
  for (const bucket of counts.buckets) {
    if (query.operation !== undefined && bucket.operation !== query.operation) continue;
    let operation = operations.get(bucket.operation);
    if (operation === undefined) {
      operation = { results: emptyResults(), differences: new Map(), noise: new Map(), unlisted: 0 };
      operations.set(bucket.operation, operation);
    }
    for (const result of SHADOW_RESULTS) operation.results[result] += bucket.results[result] ?? 0;
    for (const tally of bucket.differences) mergeTally(operation.differences, tally);
    for (const tally of bucket.noise) mergeTally(operation.noise, tally);
    operation.unlisted += bucket.unlisted;
  }
  const learnt = new Map<string, LearntNoise[]>();
  for (const sighting of counts.learnt) learnt.set(sighting.operation, [...(learnt.get(sighting.operation) ?? []), sighting]);
  const report = [...operations.entries()].map(([name, operation]): OperationReport => {
    const noise = noiseIndex(learnt.get(name) ?? []);
    const differences: PointerTally[] = [];
    for (const tally of operation.differences.values()) {
      if (isLearntNoise(tally, noise)) mergeTally(operation.noise, tally);
      else differences.push(tally);
    }
    const { results } = operation;
    return {
      operation: name,
      results,
      comparisons: results.match + results.differ + results.staging_error + results.staging_off_contract,
      differences: differences.sort(byCount).map(reported),
      noise: [...operation.noise.values()].sort(byCount).map(reported),
      learntNoise: (learnt.get(name) ?? [])
        .sort((a, b) => b.sightings - a.sightings || a.pointer.localeCompare(b.pointer) || (a.kind ?? '').localeCompare(b.kind ?? ''))
        .map((sighting) => ({
          pointer: sighting.pointer,
          ...(sighting.kind === undefined ? {} : { kind: sighting.kind }),
          sightings: sighting.sightings,
          firstSeen: iso(sighting.firstSeen),
          lastSeen: iso(sighting.lastSeen),
        })),
      unlisted: operation.unlisted,
    };
  });
  return {
    from: iso(hours[0] ?? query.from),
    to: iso(hours.length === 0 ? query.to : hours.at(-1)! + BUCKET_MS),
    operations: report.sort((a, b) => a.operation.localeCompare(b.operation)),
  };
}

export const emptyResults = (): Record<ShadowResult, number> => ({ match: 0, differ: 0, staging_error: 0, staging_off_contract: 0, skipped: 0 });
