// The gateway's requests and responses arrive with its app's prototypes, so Express's own
// `Object.setPrototypeOf` in app.handle changes nothing (decision 0012). Should node:http stop making
// them with the classes it is given, the production listener stop passing them, or Express set another
// prototype, every request would silently take V8's slow prototype change again while the gateway still
// answered as before: this test fails instead. It runs the listener production runs (`listen()`).
import { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, expect, it, vi } from 'vitest';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { sendRaw } from '../helpers/raw-socket.ts';

let running: RunningGateway | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await running?.shutdown('test over');
  running = undefined;
});

it("leaves Express no request or response prototype to change on the gateway's public listener (engaged)", async () => {
  // Nothing listens upstream: the request is refused (401) before it would be forwarded.
  const gateway = buildTestGateway({ upstreamUrl: 'http://127.0.0.1:9/v1', env: { PORT: '0', ADMIN_PORT: '0' } });
  running = await gateway.listen();
  const changed: string[] = [];
  const setPrototypeOf = Object.setPrototypeOf;
  vi.spyOn(Object, 'setPrototypeOf').mockImplementation((target: object, prototype: object | null) => {
    if ((target instanceof IncomingMessage || target instanceof ServerResponse) && Object.getPrototypeOf(target) !== prototype) {
      changed.push(target instanceof IncomingMessage ? 'request' : 'response');
    }
    return setPrototypeOf(target, prototype);
  });

  const answer = await sendRaw(running.port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });

  expect(answer.statuses).toEqual([401]);
  expect(Object.setPrototypeOf).toHaveBeenCalled();
  expect(changed).toEqual([]);
});
