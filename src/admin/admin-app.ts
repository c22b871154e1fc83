// The admin listener: liveness, readiness, metrics and the deprecation report, never on the public port.
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { toGatewayError } from '../errors/error-handler.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { refuse, sendError } from '../errors/send-error.ts';
import { shareRender } from './shared-render.ts';

export interface ReadinessCheck {
  name: string;
  /** A failing critical check makes the gateway not ready; others are reported only. */
  critical: boolean;
  check(): Promise<boolean>;
}

/** What the listener reads of a row of the deprecation report (src/observability/deprecated-calls.ts has the whole row). */
export interface ReportRow {
  operation: string;
}

export interface AdminAppOptions {
  /** False once shutdown has begun. */
  isAcceptingTraffic: () => boolean;
  checks: readonly ReadinessCheck[];
  /** The metrics exposition; `openMetrics` (with exemplars) is served when Accept asks for it first, as Prometheus does. */
  metrics?: { contentType: string; render(): Promise<string>; openMetrics?: { contentType: string; render(): Promise<string> } };
  /** The public keys of the identity signer (RFC 7517); undefined while nothing is signed (404). */
  jwks?: () => object | undefined;
  /** Who still calls deprecated operations, across replicas (the rows of `npm run deprecations -- report --json`), cached. */
  deprecations?: () => Promise<readonly ReportRow[]>;
  /** The admin API (src/admin-api/), mounted at /admin; it passes on to 404 while no admin token file is configured. */
  api?: RequestHandler;
  /** The admin API's token check, in front of /deprecations: who calls what is for operators, once there is a token to ask for. */
  guard?: RequestHandler;
  /** Told of a failure that is the gateway's own (a metrics exposition that throws), answered 500 internal_error. */
  onUnexpected: (err: unknown) => void;
}

/** `GET /deprecations` is a glance (the whole report: `npm run deprecations -- report` or the admin API): its most frequent callers per operation. */
export const DEPRECATIONS_ROWS_PER_OPERATION = 1000;

const ADMIN_NOT_FOUND =
  'Admin endpoints: /healthz, /readyz, /metrics, /deprecations, /.well-known/jwks.json (when signing), /admin/ (when ADMIN_API_TOKEN_FILE is set)';

async function runCheck(check: ReadinessCheck): Promise<boolean> {
  try {
    return await check.check();
  } catch {
    return false;
  }
}

/** The rows `GET /deprecations` shows: per operation, the first `maxRowsPerOperation` (the report comes sorted by operation, most calls first). */
export function boundReport<Row extends ReportRow>(rows: readonly Row[], maxRowsPerOperation: number): { rows: Row[]; total: number } {
  const shown: Row[] = [];
  let operation: string | undefined;
  let inOperation = 0;
  for (const row of rows) {
    if (row.operation !== operation) {
      operation = row.operation;
      inOperation = 0;
    }
    if (inOperation++ < maxRowsPerOperation) shown.push(row);
  }
  return { rows: shown, total: rows.length };
}

/** Whether a scrape's Accept header asks for OpenMetrics before the Prometheus text format (as Prometheus's own does). */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let openMetrics = 0;
  let text = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const qualityParameter = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = qualityParameter === undefined ? 1 : Number(qualityParameter.slice(2));
    if (!Number.isFinite(quality)) continue;
    if (type === 'application/openmetrics-text') openMetrics = Math.max(openMetrics, quality);
    else if (type === 'text/plain' || type === 'text/*' || type === '*/*') text = Math.max(text, quality);
  }
  return openMetrics > 0 && openMetrics >= text;
}

export function createAdminApp(options: AdminAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/healthz', function liveness(_req, res) {
    res.set('Cache-Control', 'no-store').json({ status: 'alive' });
  });

  app.get('/readyz', async function readiness(_req, res) {
    const results = await Promise.all(options.checks.map(async (check) => ({ check, ok: await runCheck(check) })));
    const accepting = options.isAcceptingTraffic();
    const ready = accepting && results.every(({ check, ok }) => ok || !check.critical);
    res
      .status(ready ? 200 : 503)
      .set('Cache-Control', 'no-store')
      .json({
        status: ready ? 'ready' : 'not_ready',
        shuttingDown: !accepting,
        checks: Object.fromEntries(results.map(({ check, ok }) => [check.name, ok ? 'ok' : 'failing'])),
      });
  });

  const { metrics } = options;
  if (metrics) {
    // Pullers that never read would otherwise each cost a render, and starve the probes of the event loop.
    const text = { contentType: metrics.contentType, render: shareRender(() => metrics.render()) };
    const { openMetrics } = metrics;
    const open = openMetrics && { contentType: openMetrics.contentType, render: shareRender(() => openMetrics.render()) };
    app.get('/metrics', async function exposeMetrics(req, res) {
      const format = open !== undefined && prefersOpenMetrics(req.headers.accept) ? open : text;
      if (open !== undefined) res.vary('Accept');
      res.set('Content-Type', format.contentType).send(await format.render());
    });
  }

  const { jwks } = options;
  if (jwks) {
    app.get('/.well-known/jwks.json', function publishKeys(_req, res, next) {
      const document = jwks();
      if (document === undefined) return next();
      // A short max-age for HTTP caches; a verifier refetches anyway when it meets an unknown kid (a rotation).
      res.set('Cache-Control', 'public, max-age=60').type('application/jwk-set+json').send(JSON.stringify(document));
    });
  }

  const { deprecations } = options;
  if (deprecations) {
    const guard: RequestHandler = options.guard ?? ((_req, _res, next) => next());
    app.get('/deprecations', guard, async function reportDeprecatedCalls(_req, res) {
      res.set('Cache-Control', 'no-store');
      try {
        const { rows, total } = boundReport(await deprecations(), DEPRECATIONS_ROWS_PER_OPERATION);
        // How many rows the whole report has: more than the array when some operation has more callers than are shown.
        res.set('X-Total-Count', String(total)).json(rows);
      } catch {
        sendError(res, new GatewayError('service_unavailable', 'The deprecation report cannot be read from Redis; retry shortly'));
      }
    });
  }

  if (options.api) app.use('/admin', options.api);

  // Before a body is read: `refuse` closes the connection (then lingers) rather than reading the body for as long as it comes.
  app.use(function adminNotFound(req, res) {
    refuse(req, res, new GatewayError('not_found', ADMIN_NOT_FOUND));
  });
  // The public side's renderer, not Express's HTML page (which shows the stack outside production).
  const handleError: ErrorRequestHandler = function handleAdminError(err, req, res, _next) {
    const error = toGatewayError(err);
    if (error.code === 'internal_error') options.onUnexpected(err);
    // Too late for an Error body (a metrics exposition cut off midway): an incomplete answer, not one that looks whole.
    if (res.headersSent) res.destroy();
    else refuse(req, res, error);
  };
  app.use(handleError);
  return app;
}
