import { defineConfig } from 'vitest/config';
import { PROCESSES } from './test/tiers.ts';

// Three tiers, fastest first, so that a broken unit fails in seconds: `npm test` runs them one after the
// other (`vitest run --project <name>`), and a bare `vitest run` orders them alike (sequence.groupOrder).
// Within a tier files run two at a time (maxWorkers): integration files start their own redis-server and
// upstreams on free ports, and this machine has two cores.
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: [...PROCESSES], sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'], exclude: [...PROCESSES], sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: [...PROCESSES],
          // The gateway processes run dist/, npm start's entry point: built from the current sources first.
          globalSetup: ['test/build-gateway.global-setup.ts'],
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
