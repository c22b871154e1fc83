// The request path's metric series are bound once and updated in place in the running gateway (decision 0010): past a
// series' first update, prom-client's own update is never called. Should prom-client keep its values otherwise, or a
// series stop being bound, every request would silently take prom-client's label hashing again: this test fails instead.
import { Counter, Histogram } from 'prom-client';
import { afterEach, expect, it, vi } from 'vitest';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { sendRaw } from '../helpers/raw-socket.ts';

let running: RunningGateway | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await running?.shutdown('test over');
  running = undefined;
});

/** Counts, by metric name, the updates made through the children prom-client hands out: its own update path. */
function countOwnUpdates(): Map<string, number> {
  const own = new Map<string, number>();
  const counted = (name: string) => own.set(name, (own.get(name) ?? 0) + 1);
  const counterLabels = Counter.prototype.labels;
  vi.spyOn(Counter.prototype, 'labels').mockImplementation(function (this: Counter, ...args: Parameters<typeof counterLabels>) {
    const child = counterLabels.apply(this, args);
    // `name` is prom-client's own field, not in its types.
    const name = (this as unknown as { name: string }).name;
    return {
      ...child,
      inc: (value?: number) => {
        counted(name);
        child.inc(value);
      },
    };
  });
  const histogramLabels = Histogram.prototype.labels;
  vi.spyOn(Histogram.prototype, 'labels').mockImplementation(function (this: Histogram, ...args: Parameters<typeof histogramLabels>) {
    const child = histogramLabels.apply(this, args);
    const name = (this as unknown as { name: string }).name;
    return {
      ...child,
      observe: (value: number) => {
        counted(name);
        child.observe(value);
      },
    };
  });
  return own;
}

it('updates the request series in place past their first update, on the listener production runs (engaged)', async () => {
  const own = countOwnUpdates();
  // Nothing listens upstream: each request is refused (401) with the same labels, before it would be forwarded.
  const gateway = buildTestGateway({ upstreamUrl: 'http://127.0.0.1:9/v1', env: { PORT: '0', ADMIN_PORT: '0' } });
  running = await gateway.listen();
  const request = 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n';

  const answer = await sendRaw(running.port, request.repeat(6), { responses: 6 });

  expect(answer.statuses).toEqual([401, 401, 401, 401, 401, 401]);
  expect(await gateway.scrape()).toContain('petstore_gateway_requests_total{operation="listPets",method="GET",status_code="401",environment="production"} 6\n');
  expect(own.get('petstore_gateway_requests_total')).toBe(1);
  expect(own.get('petstore_gateway_request_duration_seconds')).toBe(1);
});
