// What each operation of the admin document does, on the cores the CLI uses too, and how their refusals are answered.
import { KeyAdminError, type KeyAdminRefusal, type KeyOperations, type QuotaChange } from '../auth/key-admin.ts';
import type { Environment, StabilityMarker } from '../config/schema.ts';
import { toGatewayError } from '../errors/error-handler.ts';
import { GatewayError, RETRY_SOON, type ErrorCode } from '../errors/gateway-error.ts';
import type { AdminAction } from '../observability/admin-actions.ts';
import type { DeprecatedCallRow } from '../observability/deprecated-calls.ts';
import { checkUsageQuery, toUsageCsv, type UsageQuery, type UsageRow } from '../observability/usage-report.ts';
import { BrownoutAdminError, type BrownoutAdminRefusal, type BrownoutOperations } from '../policy/brownout-admin.ts';
import { checkShadowReportQuery, type ShadowReportReader } from '../shadow/report-query.ts';
import { toApiIssuedKey, toApiKey, toApiRotatedKey } from './key-representation.ts';

/** What the admin API works on: the cores behind `npm run keys` and `npm run deprecations`. */
export interface AdminOperations {
  keys: KeyOperations;
  brownouts: BrownoutOperations;
  /** The rows of `npm run deprecations -- report --json`, across replicas. */
  deprecations: () => Promise<readonly DeprecatedCallRow[]>;
  /** Where a key created without `environments` is valid: the gateway's own environment, as the CLI's default. */
  defaultEnvironments: () => readonly Environment[];
  /** Usage per consumer across replicas (GET /admin/usage), and the days it is kept (the longest range asked). */
  usage: { retentionDays: number; read(query: UsageQuery): Promise<UsageRow[]> };
  /** Where staging's answers differed from production's, across replicas (GET /admin/shadow/report, npm run shadow -- report). */
  shadowReport: ShadowReportReader;
  /** The reload SIGHUP runs (src/wiring/reload.ts): re-read, check, then serve the configuration, or keep the running one. */
  reload: () => Promise<ReloadAnswer>;
}

/** A configuration reload's outcome, by key: what changed, what waits for a restart, or why it was refused. */
export type ReloadAnswer =
  | { result: 'success'; hash: string; changed: readonly string[]; needRestart: readonly string[] }
  | { result: 'failure'; reason: string };

export interface RouteInput {
  params: Readonly<Record<string, string>>;
  /** The query, checked against the operation's parameters. */
  query: URLSearchParams;
  /** Validated against the operation's request body schema (or undefined where it takes none, or none was sent). */
  body: unknown;
  /** The media type of `types` the request's Accept prefers; the first when it names none of them. */
  preferred(types: readonly string[]): string;
}

export interface RouteAnswer {
  status: 200 | 201 | 204;
  /** Answered as JSON. */
  body?: unknown;
  /** Answered as it is, in its media type, in place of a JSON body (a report as CSV). */
  text?: { contentType: string; body: string };
  /** Headers the operation's answer carries besides the admin API's own (`Link` on a page of keys). */
  headers?: Readonly<Record<string, string>>;
  /** The key a change created (create, rotate), for the audit line. */
  createdKeyId?: string;
}

export interface AdminRoute {
  /** Present on changes: they are logged and counted. */
  action?: Exclude<AdminAction, 'authenticate'>;
  run(operations: AdminOperations, input: RouteInput): Promise<RouteAnswer>;
}

interface NewKeyBody {
  consumer?: string;
  /** `consumer`'s spelling in 1.0, accepted for one more minor version (deprecated in the document). */
  name?: string;
  environments?: Environment[];
  expiresAt?: string;
  rateLimitPerMinute?: number;
  quotaPerDay?: number;
  quotaPerMonth?: number;
  optIn?: StabilityMarker[];
}

const id = (input: RouteInput) => input.params.id!;
const operation = (input: RouteInput) => input.params.operationId!;

/** The key holder of a createKey body: `consumer`, or its deprecated alias `name`; both, differing, is refused. */
function consumerOf(body: NewKeyBody): string {
  if (body.consumer !== undefined && body.name !== undefined && body.consumer !== body.name)
    throw new GatewayError('invalid_request', "Request body fields 'consumer' and 'name' differ: send 'consumer' only ('name' is its deprecated spelling)");
  const consumer = body.consumer ?? body.name;
  if (consumer === undefined) throw new GatewayError('invalid_request', "Request body field 'consumer' is required");
  return consumer;
}

/** Where the admin API is mounted: a next page's `Link` is a path under it. */
const KEYS_PATH = '/admin/keys';

/** A page of keys: the JSON array, and the next page's URL (RFC 8288) unless it is the last. */
async function listKeys({ keys }: AdminOperations, { query }: RouteInput): Promise<RouteAnswer> {
  const limit = query.get('limit');
  const cursor = query.get('cursor');
  const page = await keys.list({ ...(cursor === null ? {} : { cursor }), ...(limit === null ? {} : { limit: Number(limit) }) });
  const body = page.records.map(toApiKey);
  if (page.next === undefined) return { status: 200, body };
  const next = new URLSearchParams({ cursor: page.next, ...(limit === null ? {} : { limit }) });
  return { status: 200, body, headers: { Link: `<${KEYS_PATH}?${next}>; rel="next"` } };
}

/** Usage by day or month, as JSON rows or CSV (Accept: text/csv); a query the store cannot answer is refused 400 first. */
async function getUsage({ usage }: AdminOperations, { query, preferred }: RouteInput): Promise<RouteAnswer> {
  const asked = Object.fromEntries(['from', 'to', 'keyId', 'granularity'].flatMap((name) => (query.has(name) ? [[name, query.get(name)!]] : [])));
  const rows = await usage.read(checkUsageQuery(asked, usage.retentionDays));
  if (preferred(['application/json', 'text/csv']) === 'text/csv')
    return { status: 200, text: { contentType: 'text/csv; charset=utf-8', body: toUsageCsv(rows) } };
  return { status: 200, body: rows };
}

/** The shadow report over a range of hours; a range the store cannot answer is refused 400 before Redis is asked. */
async function getShadowReport({ shadowReport }: AdminOperations, { query }: RouteInput): Promise<RouteAnswer> {
  const asked = { from: query.get('from') ?? undefined, to: query.get('to') ?? undefined, operation: query.get('operation') ?? undefined };
  return { status: 200, body: await shadowReport.read(checkShadowReportQuery(asked, shadowReport)) };
}

/** By operationId of config/admin.openapi.yaml: the API checks at construction that each has one. */
export const ADMIN_ROUTES: Readonly<Record<string, AdminRoute>> = {
  listKeys: { run: listKeys },
  getKey: { run: async ({ keys }, input) => ({ status: 200, body: toApiKey(await keys.show(id(input))) }) },
  createKey: {
    action: 'create_key',
    async run({ keys, defaultEnvironments }, input) {
      const body = input.body as NewKeyBody;
      const issued = await keys.create({
        consumer: consumerOf(body),
        environments: body.environments ?? defaultEnvironments(),
        ...(body.expiresAt === undefined ? {} : { expiresAt: body.expiresAt }),
        ...(body.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: body.rateLimitPerMinute }),
        ...(body.quotaPerDay === undefined ? {} : { quotaPerDay: body.quotaPerDay }),
        ...(body.quotaPerMonth === undefined ? {} : { quotaPerMonth: body.quotaPerMonth }),
        ...(body.optIn === undefined ? {} : { optedIn: body.optIn }),
      });
      return { status: 201, body: toApiIssuedKey(issued), createdKeyId: issued.record.id };
    },
  },
  revokeKey: {
    action: 'revoke_key',
    async run({ keys }, input) {
      await keys.revoke(id(input));
      return { status: 204 };
    },
  },
  rotateKey: {
    action: 'rotate_key',
    async run({ keys }, input) {
      const overlapSeconds = (input.body as { overlapSeconds?: number } | undefined)?.overlapSeconds ?? 0;
      const rotated = await keys.rotate(id(input), overlapSeconds);
      return { status: 201, body: toApiRotatedKey(rotated), createdKeyId: rotated.issued.record.id };
    },
  },
  setKeyRateLimit: {
    action: 'set_rate_limit',
    run: async ({ keys }, input) => ({ status: 200, body: toApiKey(await keys.setRateLimit(id(input), (input.body as { perMinute: number }).perMinute)) }),
  },
  setKeyOptIn: {
    action: 'set_opt_in',
    run: async ({ keys }, input) => ({
      status: 200,
      body: toApiKey(await keys.setOptIn(id(input), (input.body as { stabilities: StabilityMarker[] }).stabilities)),
    }),
  },
  setKeyQuota: {
    action: 'set_quota',
    // The body is the document's `Quota` (null removes a quota), which is the core's QuotaChange as it stands.
    run: async ({ keys }, input) => ({ status: 200, body: toApiKey(await keys.setQuota(id(input), input.body as QuotaChange)) }),
  },
  listBrownouts: { run: async ({ brownouts }) => ({ status: 200, body: await brownouts.list() }) },
  startBrownout: {
    action: 'start_brownout',
    run: async ({ brownouts }, input) => ({ status: 201, body: await brownouts.start(operation(input), (input.body as { minutes: number }).minutes) }),
  },
  stopBrownout: {
    action: 'stop_brownout',
    async run({ brownouts }, input) {
      await brownouts.stop(operation(input));
      return { status: 204 };
    },
  },
  getDeprecationReport: { run: async ({ deprecations }) => ({ status: 200, body: await deprecations() }) },
  getUsage: { run: getUsage },
  getShadowReport: { run: getShadowReport },
  reloadConfig: {
    action: 'reload_config',
    async run({ reload }) {
      const outcome = await reload();
      // The faults name keys and files, never values: the reload's own words, as its log line gives them.
      if (outcome.result === 'failure') throw new GatewayError('conflict', `The configuration was refused; the running one stays: ${outcome.reason}`);
      const { changed, needRestart, hash } = outcome;
      return { status: 200, body: { result: 'success', changed, needRestart, configHash: hash } };
    },
  },
};

/** A damaged record is the gateway's to explain (500, logged); a pepper other than the keys' is this replica's state (503). */
const KEY_REFUSALS: Readonly<Record<KeyAdminRefusal, ErrorCode>> = {
  invalid: 'invalid_request',
  not_found: 'not_found',
  conflict: 'conflict',
  damaged: 'internal_error',
  pepper_mismatch: 'service_unavailable',
};

const BROWNOUT_REFUSALS: Readonly<Record<BrownoutAdminRefusal, ErrorCode>> = {
  not_deprecated: 'not_found',
  not_in_progress: 'conflict',
};

/**
 * The refusal for an operation's failure: the cores' refusals keep their message, a fault of the gateway's code
 * (a TypeError and kin) is 500, anything else is Redis's: 503, the cause kept for the log.
 */
export function toAdminRefusal(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof KeyAdminError) return new GatewayError(KEY_REFUSALS[error.refusal], error.message, { cause: error });
  if (error instanceof BrownoutAdminError) return new GatewayError(BROWNOUT_REFUSALS[error.refusal], error.message, { cause: error });
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError || error instanceof SyntaxError)
    return toGatewayError(error);
  return new GatewayError('service_unavailable', 'Redis did not answer; retry shortly', {
    cause: error,
    headers: RETRY_SOON,
  });
}
