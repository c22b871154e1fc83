// vitest global set-up: the gateway processes the tests start run dist/ (npm start's entry point), so
// it is compiled from the current sources before any test file runs, and again before each rerun in
// watch mode (a source edited meanwhile would otherwise be tested from the old build).
import type { TestProject } from 'vitest/node';
import { buildGateway } from '../support/start-gateway-process.ts';

export default function setup(project: TestProject): void {
  buildGateway();
  project.onTestsRerun(() => buildGateway());
}
