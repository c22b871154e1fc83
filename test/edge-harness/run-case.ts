// Runs one case: a hostile upstream and a fresh gateway, the clients concurrently with their own keys, then the invariant checks.
import { TCP, type EdgeTransport } from '../helpers/edge-transport.ts';
import { driveClient } from './client-driver.ts';
import { harnessConfig, startCaseGateway, type HarnessEnvironment } from './gateway.ts';
import { startHostileUpstream } from './hostile-upstream.ts';
import { checkInvariants } from './invariants.ts';
import { createSightings } from './sightings.ts';
import { needsTls, type EdgeCase, type GatewaySettings } from './script.ts';
import type { CaseObservation, Violation } from './violations.ts';

/**
 * Added to the upstream total timeout to tell a hang from a slow machine. It only decides when to stop
 * waiting; no assertion measures time.
 */
const HANG_MARGIN_MS = 3000;

export interface CaseResult {
  violations: Violation[];
  observation: CaseObservation;
}

/** What one gateway showed: its clients' bytes, its upstream's, and its own state once they were done. */
type GatewayRun = Omit<CaseObservation, 'edgeCase' | 'keys' | 'crashes' | 'twin'>;

/** One gateway with `settings` in front of a fresh hostile upstream, the clients played against it concurrently. */
async function runGateway(
  edgeCase: EdgeCase,
  settings: GatewaySettings,
  environment: HarnessEnvironment,
  progressDeadlineMs: number,
  transport: EdgeTransport,
): Promise<GatewayRun> {
  const sightings = createSightings();
  const upstream = await startHostileUpstream(edgeCase.upstream, sightings);
  try {
    const gateway = await startCaseGateway(harnessConfig(environment.redisUrl, upstream.baseUrl, settings, environment.documents, transport.env()));
    try {
      const driven = edgeCase.clients.map((script, index) =>
        driveClient(script, {
          port: gateway.port,
          key: environment.keys[script.key]!,
          transport,
          progressDeadlineMs,
          onReceived: (received) => sightings.received(index, received),
        }),
      );
      await Promise.all(driven.map((client) => client.settled));
      // Every client has its answers, closed, or was given up on: nothing may be left in flight.
      const inFlightAfter = await gateway.settledInFlight(progressDeadlineMs);
      const clients = driven.map((client) => client.release());
      return { clients, upstream: upstream.connections, rests: upstream.rests, inFlightAfter, unexpected: gateway.unexpected() };
    } finally {
      await gateway.close();
    }
  } finally {
    await upstream.close();
  }
}

/**
 * Runs the case; a case whose gateway checks every answer beside its relay (report) runs beside a twin that checks none (off), on its own
 * upstream with the same behaviours, so that what checking changed in an answer shows against what the twin's client got.
 */
export async function runCase(edgeCase: EdgeCase, environment: HarnessEnvironment, transport: EdgeTransport = TCP): Promise<CaseResult> {
  if (needsTls(edgeCase) && transport.name !== 'tls') throw new Error('the case has hostile TLS clients: it runs over TLS only');
  const crashes: string[] = [];
  const onCrash = (error: unknown) => crashes.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const progressDeadlineMs = edgeCase.gateway.totalTimeoutMs + HANG_MARGIN_MS;
  const { contractMode } = edgeCase.gateway;
  // Report only: what report may not change is every answer; enforce's answers on the document are checked against the
  // upstream's own bytes (contract-invariants.ts), and a twin for them too would cost the regular test a third more time.
  const twinned = contractMode === 'report';
  let observation: CaseObservation;
  try {
    const [main, twin] = await Promise.all([
      runGateway(edgeCase, edgeCase.gateway, environment, progressDeadlineMs, transport),
      twinned ? runGateway(edgeCase, { ...edgeCase.gateway, contractMode: 'off' }, environment, progressDeadlineMs, transport) : undefined,
    ]);
    observation = { edgeCase, keys: environment.keys, ...main, crashes, ...(twin ? { twin: { clients: twin.clients, upstream: twin.upstream } } : {}) };
  } finally {
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  }
  return { violations: checkInvariants(observation, progressDeadlineMs), observation };
}
