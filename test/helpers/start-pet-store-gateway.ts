// The gateway in process in front of the sample pet store, with an API key: the set-up of the files that test what clients get.
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { buildTestGateway, type TestGateway, type TestGatewayOptions } from './build-test-app.ts';

export interface PetStoreGateway {
  backend: SampleBackend;
  gateway: TestGateway;
  /** The Authorization header that carries the gateway's API key. */
  auth: string;
  /** Closes the gateway, then the pet store. */
  close(): Promise<void>;
}

/**
 * Starts the pet store (`startBackend`, the sample one unless a test watches it), then builds the gateway on it with `options`.
 * A gateway that cannot be built stops the pet store before the error is thrown on: a failed set-up leaves nothing listening.
 */
export async function startPetStoreGateway(
  options: Omit<TestGatewayOptions, 'upstreamUrl'> = {},
  startBackend: () => Promise<SampleBackend> = startPetStore,
): Promise<PetStoreGateway> {
  const backend = await startBackend();
  let gateway: TestGateway;
  try {
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl, ...options });
  } catch (error) {
    await backend.close();
    throw error;
  }
  return {
    backend,
    gateway,
    auth: `Bearer ${gateway.apiKey}`,
    async close() {
      await gateway.close();
      await backend.close();
    },
  };
}
