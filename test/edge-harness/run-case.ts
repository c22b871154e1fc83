// Runs one case: a hostile upstream and a fresh gateway, the clients concurrently with their own keys, then the invariant checks.
import { driveClient } from './client-driver.ts';
import { harnessConfig, startCaseGateway, type HarnessEnvironment } from './gateway.ts';
import { startHostileUpstream } from './hostile-upstream.ts';
import { checkInvariants } from './invariants.ts';
import { createSightings } from './sightings.ts';
import type { EdgeCase } from './script.ts';
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

export async function runCase(edgeCase: EdgeCase, environment: HarnessEnvironment): Promise<CaseResult> {
  const crashes: string[] = [];
  const onCrash = (error: unknown) => crashes.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const progressDeadlineMs = edgeCase.gateway.totalTimeoutMs + HANG_MARGIN_MS;
  const sightings = createSightings();
  const upstream = await startHostileUpstream(edgeCase.upstream, sightings);
  let observation: CaseObservation;
  try {
    const gateway = await startCaseGateway(harnessConfig(environment.redisUrl, upstream.baseUrl, edgeCase.gateway));
    try {
      const driven = edgeCase.clients.map((script, index) =>
        driveClient(script, {
          port: gateway.port,
          key: environment.keys[script.key]!,
          progressDeadlineMs,
          onReceived: (received) => sightings.received(index, received),
        }),
      );
      await Promise.all(driven.map((client) => client.settled));
      // Every client has its answers, closed, or was given up on: nothing may be left in flight.
      const inFlightAfter = await gateway.settledInFlight(progressDeadlineMs);
      const clients = driven.map((client) => client.release());
      observation = {
        edgeCase,
        keys: environment.keys,
        clients,
        upstream: upstream.connections,
        rests: upstream.rests,
        inFlightAfter,
        crashes,
        unexpected: gateway.unexpected(),
      };
    } finally {
      await gateway.close();
    }
  } finally {
    await upstream.close();
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
  }
  return { violations: checkInvariants(observation, progressDeadlineMs), observation };
}
