// A fresh registry already exposes every series whose label values are known, at 0.
import { describe, expect, it } from 'vitest';
import { AUTH_REFUSAL_REASONS, createMetrics } from '../../../src/observability/metrics.ts';
import { UPSTREAM_FAILURE_KINDS } from '../../../src/proxy/upstream-failure.ts';
import { RETIRE_REASONS } from '../../../src/forks/upstream-stray-bytes.ts';
import { parseExposition, seriesKey } from '../../helpers/exposition.ts';

const OPERATIONS = ['listPets', 'createPet', 'getPet'];
const environment = 'production';

async function freshExposition(): Promise<Map<string, number>> {
  const metrics = createMetrics({ environment, version: 't', sunsets: [], operations: OPERATIONS, processMetrics: false });
  return parseExposition(await metrics.registry.metrics());
}

const metric = (suffix: string, labels: Record<string, string> = {}) => seriesKey(`petstore_gateway_${suffix}`, { ...labels, environment });

describe('a fresh registry', () => {
  it.each(OPERATIONS.flatMap((operation) => UPSTREAM_FAILURE_KINDS.map((kind) => [operation, kind])))(
    'has upstream_errors_total{operation="%s",kind="%s"} at 0',
    async (operation, kind) => {
      expect((await freshExposition()).get(metric('upstream_errors_total', { operation: operation!, kind: kind! }))).toBe(0);
    },
  );

  it.each(OPERATIONS)('has rate_limited_total{operation="%s"} at 0', async (operation) => {
    expect((await freshExposition()).get(metric('rate_limited_total', { operation }))).toBe(0);
  });

  it.each(OPERATIONS)('has upstream_response_headers_dropped_total{operation="%s"} at 0', async (operation) => {
    expect((await freshExposition()).get(metric('upstream_response_headers_dropped_total', { operation }))).toBe(0);
  });

  it.each(OPERATIONS.flatMap((operation) => ['401', '403'].map((status) => [operation, status])))(
    'has upstream_refused_identity_total{operation="%s",upstream_status="%s"} at 0',
    async (operation, status) => {
      expect((await freshExposition()).get(metric('upstream_refused_identity_total', { operation: operation!, upstream_status: status! }))).toBe(0);
    },
  );

  it('has auth_refusals_total at 0 for each reason', async () => {
    const series = await freshExposition();
    expect(AUTH_REFUSAL_REASONS).toEqual(['missing', 'malformed', 'unknown', 'revoked', 'expired', 'wrong_environment']);
    for (const reason of AUTH_REFUSAL_REASONS) expect(series.get(metric('auth_refusals_total', { reason })), reason).toBe(0);
  });

  it('has key_cache_lookups_total at 0 for hit and miss', async () => {
    const series = await freshExposition();
    expect(series.get(metric('key_cache_lookups_total', { result: 'hit' }))).toBe(0);
    expect(series.get(metric('key_cache_lookups_total', { result: 'miss' }))).toBe(0);
  });

  it('has key_cache_clears_total at 0 for every reason', async () => {
    const series = await freshExposition();
    for (const reason of ['baseline', 'resubscribed', 'event_skipped', 'epoch_ahead', 'epoch_back'])
      expect(series.get(metric('key_cache_clears_total', { reason })), reason).toBe(0);
  });

  it('has upstream_connections_retired_total at 0 for each reason', async () => {
    const series = await freshExposition();
    expect(RETIRE_REASONS).toEqual(['idle_bytes', 'bytes_after_answer', 'answer_not_status_line']);
    for (const reason of RETIRE_REASONS) expect(series.get(metric('upstream_connections_retired_total', { reason })), reason).toBe(0);
  });

  it.each(['shed_requests_total', 'rate_limit_store_errors_total', 'rate_limit_passed_total', 'upstream_circuit_open'])('has %s at 0', async (name) => {
    expect((await freshExposition()).get(metric(name))).toBe(0);
  });

  it('reads in_flight_requests and dependency_up when scraped, from what the composition root hands it', async () => {
    const metrics = createMetrics({ environment, version: 't', sunsets: [], processMetrics: false });
    let inFlight = 3;
    metrics.readAtScrape({
      inFlight: () => inFlight,
      dependencies: [
        { name: 'redis', check: async () => false },
        { name: 'upstream', check: async () => true },
      ],
    });
    const first = await metrics.registry.metrics();
    inFlight = 0;
    const second = await metrics.registry.metrics();
    expect(first).toContain('petstore_gateway_in_flight_requests{environment="production"} 3');
    expect(second).toContain('petstore_gateway_in_flight_requests{environment="production"} 0');
    expect(first).toContain('petstore_gateway_dependency_up{dependency="redis",environment="production"} 0');
    expect(first).toContain('petstore_gateway_dependency_up{dependency="upstream",environment="production"} 1');
  });

  it('labels no series with an operation the document does not have', async () => {
    const operations = new Set([...(await freshExposition()).keys()].flatMap((key) => [...key.matchAll(/operation="([^"]*)"/g)].map((match) => match[1])));
    expect([...operations].sort()).toEqual([...OPERATIONS].sort());
  });

  it('still counts from 0 after initialisation', async () => {
    const metrics = createMetrics({ environment, version: 't', sunsets: [], operations: OPERATIONS, processMetrics: false });
    metrics.upstreamFailed('getPet', 'refused');
    metrics.shed();
    metrics.upstreamHeadersDropped('listPets', 3);
    metrics.upstreamHeadersDropped('listPets', 2);
    metrics.upstreamRefusedIdentity('createPet', 403);
    const series = parseExposition(await metrics.registry.metrics());
    expect(series.get(metric('upstream_response_headers_dropped_total', { operation: 'listPets' }))).toBe(5);
    expect(series.get(metric('upstream_refused_identity_total', { operation: 'createPet', upstream_status: '403' }))).toBe(1);
    expect(series.get(metric('upstream_refused_identity_total', { operation: 'createPet', upstream_status: '401' }))).toBe(0);
    expect(series.get(metric('upstream_errors_total', { operation: 'getPet', kind: 'refused' }))).toBe(1);
    expect(series.get(metric('upstream_errors_total', { operation: 'getPet', kind: 'reset' }))).toBe(0);
    expect(series.get(metric('shed_requests_total'))).toBe(1);
  });
});

describe('deprecated operations', () => {
  const deprecated = (browned: Set<string>) =>
    createMetrics({
      environment,
      version: 't',
      sunsets: [],
      operations: OPERATIONS,
      deprecatedOperations: ['getPet'],
      brownoutActive: (operation) => browned.has(operation),
      processMetrics: false,
    });

  it.each(['sunset', 'brownout'])('have deprecated_refusals_total{reason="%s"} at 0 from the start', async (reason) => {
    const series = parseExposition(await deprecated(new Set()).registry.metrics());
    expect(series.get(metric('deprecated_refusals_total', { operation: 'getPet', reason }))).toBe(0);
  });

  it('count refusals by operation and reason', async () => {
    const metrics = deprecated(new Set());
    metrics.deprecatedRefused('getPet', 'brownout');
    const series = parseExposition(await metrics.registry.metrics());
    expect(series.get(metric('deprecated_refusals_total', { operation: 'getPet', reason: 'brownout' }))).toBe(1);
    expect(series.get(metric('deprecated_refusals_total', { operation: 'getPet', reason: 'sunset' }))).toBe(0);
  });

  it('report whether a brownout is in force when scraped', async () => {
    const browned = new Set<string>();
    const metrics = deprecated(browned);
    expect(parseExposition(await metrics.registry.metrics()).get(metric('brownout_active', { operation: 'getPet' }))).toBe(0);
    browned.add('getPet');
    expect(parseExposition(await metrics.registry.metrics()).get(metric('brownout_active', { operation: 'getPet' }))).toBe(1);
  });
});

describe('operations marked experimental or beta', () => {
  const marked = () =>
    createMetrics({
      environment,
      version: 't',
      sunsets: [],
      operations: OPERATIONS,
      markedOperations: [
        { operation: 'createPet', stability: 'experimental' },
        { operation: 'listPets', stability: 'beta' },
      ],
      processMetrics: false,
    });

  it.each([
    ['createPet', 'experimental'],
    ['listPets', 'beta'],
  ])('have stability_refusals_total{operation="%s",stability="%s"} at 0 from the start', async (operation, stability) => {
    const series = parseExposition(await marked().registry.metrics());
    expect(series.get(metric('stability_refusals_total', { operation, stability }))).toBe(0);
  });

  it('have no stability refusal series for a stable operation', async () => {
    const series = parseExposition(await marked().registry.metrics());
    expect([...series.keys()].filter((key) => key.startsWith('petstore_gateway_stability_refusals_total') && key.includes('getPet'))).toEqual([]);
  });

  it('count refusals by operation and marker', async () => {
    const metrics = marked();
    metrics.stabilityRefused('createPet', 'experimental');
    metrics.stabilityRefused('createPet', 'experimental');
    const series = parseExposition(await metrics.registry.metrics());
    expect(series.get(metric('stability_refusals_total', { operation: 'createPet', stability: 'experimental' }))).toBe(2);
    expect(series.get(metric('stability_refusals_total', { operation: 'listPets', stability: 'beta' }))).toBe(0);
  });
});
