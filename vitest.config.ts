import { defineConfig } from 'vitest/config';
import { scaled } from './support/time-scale.ts';
import { PROCESSES } from './test/tiers.ts';

// Three tiers: `unit` and `integration` run together first (one pool of two workers, so the unit files fill
// the gaps the slow integration files leave), then `processes`, the tests that start the built gateway or a
// CLI as a process. `npm test` runs the two steps (`vitest run --project ...`); a bare `vitest run` orders
// them alike (sequence.groupOrder). Two workers: integration files start their own redis-server and
// upstreams on free ports, and these machines have two cores.
// Every tier records the processes its test files start and fails if one outlives it (test/guard/); every
// timeout is scaled by TEST_TIME_SCALE (support/time-scale.ts: raise it on a busy machine).
const GUARD = 'test/guard/processes.global-setup.ts';
export default defineConfig({
  test: {
    testTimeout: scaled(30_000),
    hookTimeout: scaled(30_000),
    teardownTimeout: scaled(10_000),
    setupFiles: ['test/guard/record-children.setup.ts'],
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: [...PROCESSES],
          globalSetup: [GUARD],
          sequence: { groupOrder: 0 },
          // The unit files start no server and share no state a file leaves behind: run in one module graph per worker, they
          // import the gateway's modules once, not once a file (the project in half the time: 45 s against 90 s, load about 30;
          // green in a shuffled order too).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...PROCESSES],
          globalSetup: [GUARD],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: [...PROCESSES],
          // The gateway processes run dist/, npm start's entry point: built from the current sources first.
          globalSetup: ['test/build-gateway.global-setup.ts', GUARD],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
