// Replays every byte script in test/fixtures/edge/ against a fresh gateway, over TCP and TLS: each must now hold every edge invariant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeTransports } from '../helpers/edge-transport.ts';
import { listFixtures } from '../edge-harness/fixtures.ts';
import { startEnvironment, type HarnessEnvironment } from '../edge-harness/gateway.ts';
import { runCase } from '../edge-harness/run-case.ts';
import { needsTls } from '../edge-harness/script.ts';

const fixtures = listFixtures();
/** Keys by index: as many as the scripts use. */
const keyCount = Math.max(3, ...fixtures.flatMap(({ fixture }) => fixture.case.clients.map((client) => client.key + 1)));

const transports = edgeTransports();
/** Each fixture over each transport, but a script with clients hostile to TLS, which only TLS can carry. */
const replays = fixtures.flatMap(({ name, fixture }) =>
  transports.all
    .filter((transport) => transport.name === 'tls' || !needsTls(fixture.case))
    .map((transport) => [name, transport.name, fixture, transport] as const),
);

let environment: HarnessEnvironment | undefined;

beforeAll(async () => {
  if (fixtures.length > 0) environment = await startEnvironment(keyCount);
});
afterAll(async () => {
  await environment?.close();
  transports.remove();
});

describe('edge fixtures', () => {
  it('are byte scripts the runner can replay', () => {
    for (const { name, fixture } of fixtures) {
      expect(fixture.case.clients.length, name).toBeGreaterThan(0);
      for (const client of fixture.case.clients) {
        const length = client.pieces.reduce((sum, piece) => sum + piece.bytes.length, 0);
        expect(
          client.requests.every((request) => request.end <= length),
          name,
        ).toBe(true);
      }
    }
  });

  it.each(replays)(
    '%s over %s: holds every edge invariant',
    async (_name, _over, fixture, transport) => {
      const { violations } = await runCase(fixture.case, environment!, transport);
      expect(violations).toEqual([]);
    },
    30_000,
  );
});
