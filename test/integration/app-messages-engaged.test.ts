// The gateway's requests and responses arrive with its app's prototypes, so Express's own
// `Object.setPrototypeOf` in app.handle changes nothing (decision 0012). Should node:http stop making
// them with the classes it is given, or Express set another prototype, every request would silently take
// V8's slow prototype change again while the gateway still answered as before: this test fails instead.
import { createServer, IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it, vi } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { sendRaw } from '../helpers/raw-socket.ts';

let server: Server | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  await gateway?.close();
  server = undefined;
  gateway = undefined;
});

it("leaves Express no request or response prototype to change on the gateway's public listener (engaged)", async () => {
  // Nothing listens there: the request is refused (401) before it would be forwarded.
  gateway = buildTestGateway({ upstreamUrl: 'http://127.0.0.1:9/v1' });
  server = createServer({ ...gateway.messageClasses }, gateway.app);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const changed: string[] = [];
  const setPrototypeOf = Object.setPrototypeOf;
  vi.spyOn(Object, 'setPrototypeOf').mockImplementation((target: object, prototype: object | null) => {
    if ((target instanceof IncomingMessage || target instanceof ServerResponse) && Object.getPrototypeOf(target) !== prototype) {
      changed.push(target instanceof IncomingMessage ? 'request' : 'response');
    }
    return setPrototypeOf(target, prototype);
  });

  const answer = await sendRaw((server.address() as AddressInfo).port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });

  expect(answer.statuses).toEqual([401]);
  expect(Object.setPrototypeOf).toHaveBeenCalled();
  expect(changed).toEqual([]);
});
