// Generates signal schedules during load: the built gateway started as an operator starts it, a crowd held open against it, a
// well-behaved client's request in flight to a slow backend, and SIGTERM or SIGINT sent to the process group or the gateway alone,
// once, twice or three times, during that request and the drain.
import fc from 'fast-check';
import type { StartedBy } from '../helpers/gateway-group.ts';
import { type CrowdBounds, type CrowdSpec, crowdSpecWithin } from './crowd-generators.ts';

export interface ScheduledSignal {
  signal: 'SIGTERM' | 'SIGINT';
  /** `group`: the whole process group, as systemd (KillMode=control-group), `kill -- -PGID` and Ctrl-C send it; `gateway`: its pid alone. */
  to: 'group' | 'gateway';
  /**
   * When it is sent, in thousandths of the backend's hold of the in-flight request, counted from the moment the backend got it
   * (and never before the signal before it was taken by the gateway): the first while the request is held, the others during it,
   * in the drain after it (past 1000), or once the gateway has exited.
   */
  atPermille: number;
}

export interface SignalCase {
  startedBy: StartedBy;
  crowd: CrowdSpec;
  /** How long the backend holds the well-behaved client's request (ms on a quiet machine, scaled). */
  backendMs: number;
  /** One, two or three signals; the third is as the second: the documented rule has no escalation (docs/operations.md, "Client connections"). */
  signals: ScheduledSignal[];
}

/** Small crowds: each case starts a gateway process, so the processes tier can afford a few (and `npm run fuzz --signals N` more). */
export const SIGNAL_CROWD_BOUNDS: CrowdBounds = { maxConnections: 32, neverReading: 12, pipelined: 8, slowHeads: 16, posters: 3 };

const scheduledSignal = (atPermille: fc.Arbitrary<number>): fc.Arbitrary<ScheduledSignal> =>
  fc.record({ signal: fc.constantFrom('SIGTERM' as const, 'SIGINT' as const), to: fc.constantFrom('group' as const, 'gateway' as const), atPermille });

export const signalCase: fc.Arbitrary<SignalCase> = fc.record({
  startedBy: fc.constantFrom<StartedBy>('npm start', 'bin/petstore-gateway'),
  crowd: crowdSpecWithin(SIGNAL_CROWD_BOUNDS),
  backendMs: fc.integer({ min: 300, max: 1000 }),
  signals: fc
    .tuple(
      // The drain always begins with the request in flight.
      scheduledSignal(fc.integer({ min: 0, max: 800 })),
      fc.array(scheduledSignal(fc.integer({ min: 0, max: 1150 })), { minLength: 0, maxLength: 2 }),
    )
    .map(([first, repeats]) => [first, ...repeats.sort((a, b) => a.atPermille - b.atPermille)]),
});
