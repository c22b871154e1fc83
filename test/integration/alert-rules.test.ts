// The alert rules pass promtool's checks and their unit tests (Prometheus from Debian).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';

const run = promisify(execFile);

it('promtool check rules accepts deploy/prometheus/alerts.yaml', async () => {
  const { stdout } = await run('promtool', ['check', 'rules', 'deploy/prometheus/alerts.yaml'], { cwd: PROJECT_ROOT });
  expect(stdout).toContain('SUCCESS: 19 rules found');
});

it("promtool test rules passes every alert's unit test", async () => {
  const { stdout } = await run('promtool', ['test', 'rules', 'alerts.test.yaml'], { cwd: `${PROJECT_ROOT}/deploy/prometheus` });
  expect(stdout).toContain('SUCCESS');
});
