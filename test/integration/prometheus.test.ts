// A real Prometheus scrapes a live gateway under traffic; every dashboard panel query must return data.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { systemClock } from '../../src/time/clock.ts';
import { dashboardQueries, substituteGrafanaVariables } from '../helpers/promql.ts';
import { startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/start-gateway-process.ts';
import { startPrometheus, type PrivatePrometheus } from '../helpers/start-prometheus.ts';
import { startRedis, type PrivateRedis } from '../helpers/start-redis.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../helpers/start-upstream.ts';

const PEPPER = 'prometheus-test-pepper-01';
let redis: PrivateRedis;
let upstream: ScriptedUpstream;
let gateway: GatewayProcess;
let prometheus: PrivatePrometheus;
let traffic: NodeJS.Timeout;

/** An upstream that answers like the pet store, and resets the connection for limit=13. */
function petStoreThatSometimesFails(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) {
  if (req.url?.includes('limit=13')) return req.socket.destroy();
  req.resume();
  const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  if (req.method === 'POST') return json(201, { id: 7, name: 'Rex', categoryId: 1 });
  if (req.url?.startsWith('/v1/pets/')) return json(200, { id: 1, name: 'Rex', categoryId: 1 });
  return json(200, [{ id: 1, name: 'Rex', categoryId: 1 }]);
}

beforeAll(async () => {
  redis = await startRedis();
  upstream = await startScriptedUpstream(petStoreThatSometimesFails);
  gateway = await startGatewayProcess({ REDIS_URL: redis.url, UPSTREAM_URL: upstream.baseUrl, GATEWAY_ENVIRONMENT: 'production', API_KEY_PEPPER: PEPPER });
  const adminRedis = new Redis(redis.url);
  const admin = new KeyAdmin(adminRedis, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock });
  const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
  const revoked = await admin.create({ consumer: 'old', environments: ['production'] });
  const throttled = await admin.create({ consumer: 'eager', environments: ['production'], rateLimitPerMinute: 1 });
  await admin.revoke(revoked.record.id);
  adminRedis.disconnect();

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
  ];
  // Bounded: a few requests every 50 ms on loopback, stopped in afterAll.
  traffic = setInterval(() => {
    for (const call of calls)
      void call().then(
        (res) => res.arrayBuffer(),
        () => undefined,
      );
  }, 50);
  prometheus = await startPrometheus([`127.0.0.1:${gateway.adminPort}`], 'an-operator-chosen-job-name');
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
  await prometheus?.stop();
  await gateway?.stop();
  await upstream?.close();
  await redis?.stop();
});

describe('every dashboard query against a real Prometheus', () => {
  it.each(dashboardQueries().map((query) => [query.where, query.expr]))('%s returns data', async (_where, expr) => {
    const result = await prometheus.query(substituteGrafanaVariables(expr, 'production').replaceAll('[1m]', '[15s]'));
    expect(result.length).toBeGreaterThan(0);
  });

  it("sees the job name only in Prometheus' own labels, never needed by a panel", async () => {
    const [series] = await prometheus.query('petstore_gateway_build_info');
    expect(series!.metric).toMatchObject({ job: 'an-operator-chosen-job-name', environment: 'production' });
    expect(dashboardQueries().some((query) => query.expr.includes('job'))).toBe(false);
  });
});
