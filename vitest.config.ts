import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/build-gateway.global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration files start their own redis-server and upstreams on free ports; two cores here.
    maxWorkers: 2,
  },
});
