// The set-up helper of the files that test what clients get: a gateway that cannot be built leaves no pet store listening.
import { connect } from 'node:net';
import { expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { startPetStoreGateway } from '../helpers/start-pet-store-gateway.ts';

/** How a connection to the port ends: accepted, or refused with the error's code. */
function dial(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

it('stops the pet store it started when the gateway cannot be built, and throws the build error on', async () => {
  let started: SampleBackend | undefined;
  const startWatched = async () => {
    started = await startPetStore();
    return started;
  };
  await expect(startPetStoreGateway({ overrides: { upstream: { maxSockets: 0 } } }, startWatched)).rejects.toThrow(/upstream\.maxSockets/);
  expect(started).toBeDefined();
  expect(started!.server.listening).toBe(false);
  expect(await dial(started!.port)).toBe('ECONNREFUSED');
});
