// Requests and responses made with an Express app's prototypes: a real node:http server and real Express apps, over raw sockets.
import type { AddressInfo } from 'node:net';
import { createServer, IncomingMessage, type Server, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createAppMessages, type AppMessages } from '../../../src/forks/app-messages.ts';
import { parseResponses, sendRaw } from '../../helpers/raw-socket.ts';

/** An app that answers with what it read of the request through Express (its query, its body). */
function echoApp(name: string): Express {
  const app = express();
  app.post('/echo', (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => res.json({ app: name, query: req.query, body }));
  });
  return app;
}

interface Arrival {
  requestPrototype: object | null;
  responsePrototype: object | null;
  ownKeys: string[];
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server making its messages with `messages`, recording each request's prototypes as it arrives, before `serve()` has it. */
async function listen(messages: AppMessages, serve: () => Express): Promise<{ port: number; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  server = createServer({ ...messages.classes }, (req, res) => {
    arrivals.push({ requestPrototype: Object.getPrototypeOf(req), responsePrototype: Object.getPrototypeOf(res), ownKeys: Object.keys(req) });
    serve()(req, res);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server!.address() as AddressInfo).port, arrivals };
}

const POST = 'POST /echo?color=red HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n';

describe('messages made with an app’s prototypes', () => {
  it('arrive with the adopted app’s request and response prototypes, before Express has them', async () => {
    const messages = createAppMessages();
    const app = echoApp('first');
    messages.adopt(app);
    const { port, arrivals } = await listen(messages, () => app);

    await sendRaw(port, POST, { responses: 1 });

    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.requestPrototype).toBe(app.request);
    expect(arrivals[0]!.responsePrototype).toBe(app.response);
  });

  it('are served by Express as node:http’s own: the query read, a chunked body streamed whole, the answer framed', async () => {
    const messages = createAppMessages();
    const app = echoApp('first');
    messages.adopt(app);
    const { port } = await listen(messages, () => app);

    const answer = await sendRaw(port, POST, { responses: 1 });

    const [response] = parseResponses(answer.text);
    expect(response!.status).toBe(200);
    expect(response!.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(response!.body)).toEqual({ app: 'first', query: { color: 'red' }, body: 'abcde' });
  });

  it('carry the same own fields as node:http’s own request', async () => {
    const messages = createAppMessages();
    const app = echoApp('first');
    messages.adopt(app);
    const { port, arrivals } = await listen(messages, () => app);
    const plain: string[][] = [];
    const plainServer = createServer((req, res) => {
      plain.push(Object.keys(req));
      app(req, res);
    });
    await new Promise<void>((resolve) => plainServer.listen(0, '127.0.0.1', resolve));

    await sendRaw(port, POST, { responses: 1 });
    await sendRaw((plainServer.address() as AddressInfo).port, POST, { responses: 1 });
    await new Promise((resolve) => plainServer.close(resolve));

    expect(arrivals[0]!.ownKeys).toEqual(plain[0]);
  });

  it('arrive with the next app’s prototypes once it is adopted', async () => {
    const messages = createAppMessages();
    const first = echoApp('first');
    const second = echoApp('second');
    let serving = first;
    messages.adopt(first);
    const { port, arrivals } = await listen(messages, () => serving);

    await sendRaw(port, POST, { responses: 1 });
    serving = second;
    messages.adopt(second);
    const answer = await sendRaw(port, POST, { responses: 1 });

    expect(arrivals.map(({ requestPrototype }) => requestPrototype)).toEqual([first.request, second.request]);
    expect(arrivals[1]!.responsePrototype).toBe(second.response);
    expect(JSON.parse(parseResponses(answer.text)[0]!.body)).toMatchObject({ app: 'second' });
  });

  it('are node:http’s own until an app is adopted', async () => {
    const messages = createAppMessages();
    const app = echoApp('first');
    const { port, arrivals } = await listen(messages, () => app);

    const answer = await sendRaw(port, POST, { responses: 1 });

    expect(arrivals[0]!.requestPrototype).toBe(IncomingMessage.prototype);
    expect(arrivals[0]!.responsePrototype).toBe(ServerResponse.prototype);
    expect(answer.statuses).toEqual([200]);
  });
});
