// The upstream pool gauges read undici's pools at scrape time, through the composition root, across a reload.
import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

let upstream: ScriptedUpstream;
let gateway: TestGateway;
/** Upstream answers held back until the test releases them (while `holding`). */
let held: ServerResponse[];
let holding: boolean;
let maxSockets: number;

const pool = (suffix: string, labels: Record<string, string>) =>
  seriesKey(`petstore_gateway_upstream_pool_${suffix}`, { base_path: '/v1', ...labels, environment: 'production' });

async function scrape(): Promise<Map<string, number>> {
  return parseExposition(await gateway.scrape());
}

function send(): Promise<unknown> {
  return request(gateway.app).get('/v1/pets?limit=5').set('Authorization', `Bearer ${gateway.apiKey}`).then();
}

const answer = (res: ServerResponse) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');

/** Answers the held requests, and from now on every request at once. */
function release(): void {
  holding = false;
  for (const res of held.splice(0)) answer(res);
}

beforeEach(async () => {
  held = [];
  holding = true;
  maxSockets = 1;
  upstream = await startScriptedUpstream((req, res) => {
    req.resume();
    if (holding) held.push(res);
    else answer(res);
  });
  gateway = buildTestGateway({
    upstreamUrl: upstream.baseUrl,
    overrides: { upstream: { maxSockets: 1 } },
    reloadOverrides: () => ({ upstream: { maxSockets } }),
  });
});

afterEach(async () => {
  release();
  await gateway.close();
  await upstream.close();
});

describe('the upstream pool gauges', () => {
  it('show the connections busy, the requests running and those queued for a connection, against the most allowed', async () => {
    const answers = [send(), send(), send()];
    await waitFor(async () => (await scrape()).get(pool('requests', { state: 'queued' })) === 2);
    const full = await scrape();
    expect(full.get(pool('connections', { state: 'busy' }))).toBe(1);
    expect(full.get(pool('connections', { state: 'free' }))).toBe(0);
    expect(full.get(pool('requests', { state: 'running' }))).toBe(1);
    expect(full.get(pool('max_connections', {}))).toBe(1);

    // One at a time through the single connection, which then stays open, free.
    release();
    await Promise.all(answers);
    expect(upstream.requests).toBe(3);
    const idle = await scrape();
    expect(idle.get(pool('connections', { state: 'busy' }))).toBe(0);
    expect(idle.get(pool('connections', { state: 'free' }))).toBe(1);
    expect(idle.get(pool('requests', { state: 'running' }))).toBe(0);
    expect(idle.get(pool('requests', { state: 'queued' }))).toBe(0);
  });

  it("add up a retired configuration's pool while its requests finish, with the new configuration's most allowed", async () => {
    const before = send();
    await waitFor(async () => held.length === 1);
    maxSockets = 4;
    expect((await gateway.reload()).result).toBe('success');
    const after = send();
    await waitFor(async () => held.length === 2);
    const both = await scrape();
    expect(both.get(pool('connections', { state: 'busy' }))).toBe(2);
    expect(both.get(pool('requests', { state: 'running' }))).toBe(2);
    expect(both.get(pool('max_connections', {}))).toBe(4);

    release();
    await Promise.all([before, after]);
    // The retired generation's pool closes once its request is answered: only the new one's connection is left.
    await waitFor(async () => (await scrape()).get(pool('connections', { state: 'free' })) === 1);
    expect((await scrape()).get(pool('connections', { state: 'busy' }))).toBe(0);
  });
});
