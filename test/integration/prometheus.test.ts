// A real Prometheus scrapes live gateways under traffic; every dashboard panel query must return data, and ratio panels a number on a healthy one.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { systemClock } from '../../src/time/clock.ts';
import { dashboardQueries, substituteGrafanaVariables } from '../helpers/promql.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { PROJECT_ROOT, startGatewayProcess, waitFor, waitUntilReady, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startPrometheus, type PrivatePrometheus } from '../helpers/start-prometheus.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';
import { createTestPki, type TestPki } from '../helpers/test-certificates.ts';

const PEPPER = 'prometheus-test-pepper-01';
let redis: PrivateRedis;
let upstream: ScriptedUpstream;
let gateway: GatewayProcess;
/** A gateway (staging) whose traffic is all answered 200, by a backend that never fails it. */
let healthy: GatewayProcess;
/** A gateway (production) whose public listener speaks HTTPS: the certificate expiry panel's series. */
let tls: GatewayProcess;
let pki: TestPki;
let prometheus: PrivatePrometheus;
let receiver: OtlpReceiver;
let configDir: string;
let traffic: NodeJS.Timeout;
let healthyTraffic: NodeJS.Timeout;

/** An upstream that answers like the pet store, and resets the connection for limit=13. */
function petStoreThatSometimesFails(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) {
  if (req.url?.includes('limit=13')) return req.socket.destroy();
  req.resume();
  const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  if (req.method === 'POST') return json(201, { id: 7, name: 'Rex', categoryId: 1 });
  // Staging (a shadowed request) names the pet otherwise: the shadow panels' differences.
  if (req.url?.startsWith('/v1/pets/')) return json(200, { id: 1, name: req.headers['x-gateway-shadow'] === '1' ? 'Max' : 'Rex', categoryId: 1 });
  return json(200, [{ id: 1, name: 'Rex', categoryId: 1 }]);
}

beforeAll(async () => {
  redis = await startRedis();
  upstream = await startScriptedUpstream(petStoreThatSometimesFails);
  receiver = await startOtlpReceiver();
  // The shipped configuration, with a second version whose document marks operations experimental and
  // beta: the stability panel's series exist (and its refusals happen).
  configDir = mkdtempSync(join(tmpdir(), 'prometheus-test-'));
  const config = parseYaml(readFileSync(join(PROJECT_ROOT, 'config/gateway.yaml'), 'utf8')) as Record<string, unknown>;
  const v2 = {
    document: join(PROJECT_ROOT, 'test/fixtures/petstore-v2.openapi.yaml'),
    upstreams: { production: upstream.baseUrl.replace(/\/v1$/, '/v2'), staging: upstream.baseUrl.replace(/\/v1$/, '/v2') },
  };
  writeFileSync(join(configDir, 'gateway.yaml'), stringifyYaml({ ...config, contract: join(PROJECT_ROOT, 'config', String(config.contract)), versions: [v2] }));
  gateway = await startGatewayProcess({
    GATEWAY_CONFIG: join(configDir, 'gateway.yaml'),
    REDIS_URL: redis.url,
    UPSTREAM_URL: upstream.baseUrl,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    // Its requests traced: their trace ids are the latency histograms' exemplars.
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    // As the Downward API sets them in the pod (deploy/kubernetes/base/deployment.yaml).
    GATEWAY_CPU_REQUEST_MILLICORES: '1000',
    GATEWAY_MEMORY_LIMIT_BYTES: String(512 * 1024 ** 2),
    // Report (production's mode), but every answer checked rather than production's 2% sample: the contract
    // drift panel draws no line for an operation with no checked answer in the window, and 15 s of a 2%
    // sample may hold none.
    CONTRACT_RESPONSES_SAMPLE: '1',
    // Every safe request shadowed to staging (here the same backend, which tells a shadow by its marker): the
    // shadow row's series.
    SHADOW_SAMPLE: '1',
    SHADOW_UPSTREAM_URL: upstream.baseUrl,
  });
  healthy = await startGatewayProcess({ REDIS_URL: redis.url, UPSTREAM_URL: upstream.baseUrl, GATEWAY_ENVIRONMENT: 'staging', API_KEY_PEPPER: PEPPER });
  pki = createTestPki();
  const listenerPair = pki.authority('prometheus-test-ca').issue({ name: 'listener', days: 30 });
  tls = await startGatewayProcess({
    REDIS_URL: redis.url,
    UPSTREAM_URL: upstream.baseUrl,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    TLS_CERT_FILE: listenerPair.certFile,
    TLS_KEY_FILE: listenerPair.keyFile,
  });
  const adminRedis = new Redis(redis.url);
  const admin = new KeyAdmin(adminRedis, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock });
  const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
  const revoked = await admin.create({ consumer: 'old', environments: ['production'] });
  const throttled = await admin.create({ consumer: 'eager', environments: ['production'], rateLimitPerMinute: 1 });
  await admin.revoke(revoked.record.id);
  const staging = await admin.create({ consumer: 'calm', environments: ['staging'] });
  // Under its rate limit: production answers reach the backend (and are checked) all along, also while the
  // fast traffic's key waits out its window.
  const steady = await admin.create({ consumer: 'steady', environments: ['production'] });
  adminRedis.disconnect();
  await Promise.all([waitUntilReady(gateway), waitUntilReady(healthy), waitUntilReady(tls)]);

  const base = `http://127.0.0.1:${gateway.port}/v1`;
  const auth = { Authorization: `Bearer ${key}` };
  const calls: Array<() => Promise<Response>> = [
    () => fetch(`${base}/pets?limit=5`, { headers: auth }),
    () => fetch(`${base}/pets`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' }),
    () => fetch(`${base}/pets/1`, { headers: auth }),
    () => fetch(`${base}/pets?limit=13`, { headers: auth }),
    () => fetch(`${base}/pets?limit=0`, { headers: auth }),
    () => fetch(`${base}/store/orders`, { headers: auth }),
    () => fetch(`${base}/pets`),
    () => fetch(`${base}/pets`, { headers: { Authorization: `Bearer ${revoked.key}` } }),
    () => fetch(`${base}/pets`, { headers: { Authorization: `Bearer ${throttled.key}` } }),
    // Experimental, and the key did not opt in: 403 stability_not_allowed.
    () => fetch(`http://127.0.0.1:${gateway.port}/v2/animals/7/photos`, { headers: auth }),
  ];
  // Bounded: a few requests every 50 ms on loopback, stopped in afterAll.
  traffic = setInterval(() => {
    for (const call of calls)
      void call().then(
        (res) => res.arrayBuffer(),
        () => undefined,
      );
  }, 50);
  // listPets only, within staging's rate limit: no 4xx or 5xx, no deprecated call. And the same on production,
  // under its rate limit too.
  healthyTraffic = setInterval(() => {
    void fetch(`${base}/pets?limit=5`, { headers: { Authorization: `Bearer ${steady.key}` } }).then(
      (res) => res.arrayBuffer(),
      () => undefined,
    );
    void fetch(`http://127.0.0.1:${healthy.port}/v1/pets?limit=5`, { headers: { Authorization: `Bearer ${staging.key}` } }).then(
      (res) => res.arrayBuffer(),
      () => undefined,
    );
  }, 250);
  prometheus = await startPrometheus(
    [`127.0.0.1:${gateway.adminPort}`, `127.0.0.1:${healthy.adminPort}`, `127.0.0.1:${tls.adminPort}`],
    'an-operator-chosen-job-name',
  );
  // rate() over the panels' 15 s windows needs a handful of scrapes.
  await waitFor(
    async () => {
      const samples = await prometheus.query('count_over_time(petstore_gateway_build_info[1m])');
      return Number(samples[0]?.value[1] ?? 0) >= 8;
    },
    40_000,
    500,
  );
}, 60_000);

afterAll(async () => {
  clearInterval(traffic);
  clearInterval(healthyTraffic);
  await prometheus?.stop();
  await gateway?.stop();
  await healthy?.stop();
  await tls?.stop();
  await upstream?.close();
  await redis?.stop();
  await receiver?.close();
  rmSync(configDir, { recursive: true, force: true });
  pki?.remove();
});

describe('every dashboard query against a real Prometheus', () => {
  it.each(dashboardQueries().map((query) => [query.where, query.expr]))('%s returns data', async (_where, expr) => {
    const result = await prometheus.query(substituteGrafanaVariables(expr, 'production').replaceAll('[1m]', '[15s]'));
    expect(result.length).toBeGreaterThan(0);
  });

  const ratios = dashboardQueries().filter((query) => query.unit === 'percentunit');
  /** One line per operation and kind (or reason): read below, line by line. */
  const CONTRACT_DRIFT = 'gateway-overview.json: Backend contract drift';
  /** One line per shadowed operation, on the production gateway only (the staging one shadows nothing): read below. */
  const SHADOW_DIFFER = 'gateway-overview.json: Shadow comparisons that differ';

  const oneLineRatios = ratios.filter((query) => query.where !== CONTRACT_DRIFT && query.where !== SHADOW_DIFFER);

  it.each(oneLineRatios.map((query) => [query.where, query.expr]))('%s reads a number on a healthy gateway, not "No data"', async (_where, expr) => {
    const result = await prometheus.query(substituteGrafanaVariables(expr, 'staging').replaceAll('[1m]', '[15s]'));
    expect(result).toHaveLength(1);
    expect(Number.isFinite(Number(result[0]!.value[1]))).toBe(true);
  });

  it('finds the ratio panels (5xx, key cache hits, deprecated share, contract drift), and reads 0 errors on the healthy gateway', async () => {
    expect(ratios.map((query) => query.where.split(': ')[1]).sort()).toEqual([
      '5xx ratio',
      'Backend contract drift',
      'Backend contract drift',
      'Key cache hit ratio',
      'Shadow comparisons that differ',
      'Share of traffic on deprecated operations',
    ]);
    const fiveXx = ratios.find((query) => query.where.endsWith(': 5xx ratio'))!;
    const [healthyRatio] = await prometheus.query(substituteGrafanaVariables(fiveXx.expr, 'staging').replaceAll('[1m]', '[15s]'));
    expect(healthyRatio!.value[1]).toBe('0');
  });

  it('reads 0 for every violation kind and unchecked reason of listPets on the healthy gateway, and no line for the operations it never checked', async () => {
    const [violations, unchecked] = ratios.filter((query) => query.where === CONTRACT_DRIFT);
    const lines = async (expr: string, label: string) =>
      (await prometheus.query(substituteGrafanaVariables(expr, 'staging').replaceAll('[1m]', '[15s]')))
        .map((series) => `${series.metric.operation} ${series.metric[label]} ${series.value[1]}`)
        .sort();
    expect(await lines(violations!.expr, 'kind')).toEqual([
      'listPets body_schema 0',
      'listPets error_status_mismatch 0',
      'listPets media_type 0',
      'listPets missing_header 0',
      'listPets undeclared_status 0',
      'listPets unparseable_body 0',
    ]);
    expect(await lines(unchecked!.expr, 'reason')).toEqual([
      'listPets encoding 0',
      'listPets too_deep 0',
      'listPets too_large 0',
      'listPets too_many_values 0',
    ]);
  });

  it('reads the share of shadowed getPet comparisons that differ: all of them, staging renames the pet', async () => {
    const differ = ratios.find((query) => query.where === SHADOW_DIFFER)!;
    const lines = await prometheus.query(substituteGrafanaVariables(differ.expr, 'production').replaceAll('[1m]', '[15s]'));
    expect(lines.find((series) => series.metric.operation === 'getPet')?.value[1]).toBe('1');
    // The others' staging answers as production does (those compared within the window).
    expect(lines.filter((series) => series.metric.operation !== 'getPet').map((series) => series.value[1])).toEqual(
      lines.filter((series) => series.metric.operation !== 'getPet').map(() => '0'),
    );
  });

  const withExemplars = dashboardQueries().filter((query) => query.exemplar);

  it('asks for exemplars on the p99 lines of the three latency panels', () => {
    expect(withExemplars.map((query) => query.where)).toEqual([
      'gateway-overview.json: Latency p50 / p95 / p99 by operation',
      'gateway-overview.json: Gateway overhead p50 / p99 (own time, backend excluded)',
      'gateway-overview.json: Backend latency p50 / p99',
    ]);
  });

  it.each(withExemplars.map((query) => [query.where, query.expr]))('%s: its exemplars open traces the gateway exported', async (_where, expr) => {
    const found = await prometheus.exemplars(substituteGrafanaVariables(expr, 'production').replaceAll('[1m]', '[15s]'), 60);
    const traceIds = found.flatMap((series) => series.exemplars.map((exemplar) => exemplar.labels.trace_id));
    expect(traceIds.length).toBeGreaterThan(0);
    // A span is exported in a batch up to OTEL_BSP_SCHEDULE_DELAY after its request ends, and Prometheus may
    // have scraped that request's exemplar in between: wait for the batch, not for a fixed time.
    const notExported = () => {
      const exported = new Set(receiver.spans.map((span) => span.traceId));
      return traceIds.filter((traceId) => !exported.has(traceId!));
    };
    await waitFor(async () => notExported().length === 0, 10_000, 100).catch(() => undefined);
    expect(notExported()).toEqual([]);
  });

  it.each(['key_lookup', 'rate_limit_increment', 'report_flush'])('times the %s Redis commands the traffic sends', async (command) => {
    const [count] = await prometheus.query(`sum(petstore_gateway_redis_command_duration_seconds_count{command="${command}",environment="production"})`);
    expect(Number(count!.value[1])).toBeGreaterThan(0);
  });

  it("sees the job name only in Prometheus' own labels, never needed by a panel", async () => {
    const [series] = await prometheus.query('petstore_gateway_build_info{environment="production"}');
    expect(series!.metric).toMatchObject({ job: 'an-operator-chosen-job-name', environment: 'production' });
    expect(dashboardQueries().some((query) => query.expr.includes('job'))).toBe(false);
  });
});
