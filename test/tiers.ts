// Which tier each test file runs in: vitest.config.ts defines the tiers from this list, and a unit test keeps it whole.

/**
 * The processes tier: tests that start the built gateway (dist/, through START_ARGS, npm or bin/petstore-gateway)
 * or one of the operators' commands (src/cli, the demo backend, the preflight) as a child process. Each pays for
 * a Node start-up and they run dist/, so they run last, after the build. Tests that start redis-server,
 * Prometheus, promtool, Spectral, kubectl or Chromium as real parts of what they check stay in their tier.
 */
export const PROCESSES: readonly string[] = [
  'test/unit/bench/instructions-help.test.ts',
  'test/unit/deploy/dockerfile.test.ts',
  'test/integration/admin-flood.test.ts',
  'test/integration/admin-key-listing.test.ts',
  'test/integration/backend-script.test.ts',
  'test/integration/cli-escaping.test.ts',
  'test/integration/config-reload-admin.test.ts',
  'test/integration/config-reload-process.test.ts',
  'test/integration/config-validate.test.ts',
  'test/integration/deprecation-replicas.test.ts',
  'test/integration/group-signals.test.ts',
  'test/integration/identity-gateway.test.ts',
  'test/integration/identity-key-cli.test.ts',
  'test/integration/key-backup.test.ts',
  'test/integration/keys-cli.test.ts',
  'test/integration/keys-cli-quota.test.ts',
  'test/integration/lifecycle.test.ts',
  'test/integration/never-reading-flood.test.ts',
  'test/integration/pepper-fingerprint.test.ts',
  'test/integration/preflight.test.ts',
  'test/integration/prometheus.test.ts',
  'test/integration/rate-limit-replicas.test.ts',
  'test/integration/redis-cluster-failover.test.ts',
  'test/integration/replicas.test.ts',
  'test/integration/rolling-restart.test.ts',
  'test/integration/shadow-cli.test.ts',
  'test/integration/signal-schedules.test.ts',
  'test/integration/start-up-errors.test.ts',
  'test/integration/supervisor.test.ts',
  'test/integration/tls-process.test.ts',
  'test/integration/tracing-process.test.ts',
  'test/integration/usage.test.ts',
];
