// vitest global set-up: the gateway processes the tests start run dist/ (npm start's entry point), so
// it is compiled from the current sources before any test file runs.
import { buildGateway } from './helpers/start-gateway-process.ts';

export default function setup(): void {
  buildGateway();
}
