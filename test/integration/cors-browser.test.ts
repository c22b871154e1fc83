// CORS as a person meets it: a real headless Chromium runs a page on another origin that calls the gateway with fetch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { startChromium, type Chromium } from '../helpers/start-chromium.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';
import { listen } from '../helpers/raw-request.ts';
import { startPetStore } from '../../support/start-upstream.ts';

/** The shop's page: it calls the gateway as a browser client would, and says what its script could read. */
const PAGE = `<!doctype html>
<title>Pet shop</title>
<script>
  async function callGateway(url, key) {
    try {
      const response = await fetch(url, key ? { headers: { Authorization: 'Bearer ' + key } } : {});
      return { status: response.status, rateLimit: response.headers.get('RateLimit'), body: await response.json() };
    } catch (error) {
      return { rejected: error.name };
    }
  }
</script>`;

let backend: SampleBackend;
let edge: Edge;
let browser: Chromium;
let allowedPage: Awaited<ReturnType<typeof listen>>;
let otherPage: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  const servePage = (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  };
  // Two origins: http://127.0.0.1 on two ports, the gateway on a third.
  allowedPage = await listen(servePage);
  otherPage = await listen(servePage);
  backend = await startPetStore();
  edge = await startEdge(backend.baseUrl, { cors: { allowedOrigins: { production: [`http://127.0.0.1:${allowedPage.port}`] } } });
  browser = await startChromium();
});
afterAll(async () => {
  await browser?.close();
  await edge?.close();
  await backend?.close();
  await allowedPage?.close();
  await otherPage?.close();
});

const pets = () => `http://127.0.0.1:${edge.running.port}/v1/pets`;
const call = (page: { port: number }, key?: string) =>
  browser.evaluateIn(`http://127.0.0.1:${page.port}/`, `callGateway(${JSON.stringify(pets())}, ${JSON.stringify(key ?? null)})`);

describe('a page on an allowed origin', () => {
  it('calls the API with its key (after the preflight the gateway answers) and reads the RateLimit header', async () => {
    const result = (await call(allowedPage, edge.gateway.apiKey)) as { status: number; rateLimit: string; body: unknown[] };
    expect(result.status).toBe(200);
    expect(result.rateLimit).toMatch(/^"listPets"; r=\d+; t=\d+$/);
    expect(Array.isArray(result.body)).toBe(true);
    // Chromium asked first: Authorization is not a header a page may send unasked.
    const answered = edge.gateway.logs.map((line) => [
      (line.req as { method?: string } | undefined)?.method,
      (line.res as { statusCode?: number } | undefined)?.statusCode,
    ]);
    expect(answered).toContainEqual(['OPTIONS', 204]);
  });

  it("reads the gateway's Error body when it is refused", async () => {
    expect(await call(allowedPage)).toEqual({ status: 401, rateLimit: null, body: expect.objectContaining({ code: 'unauthorized', status: 401 }) });
  });
});

describe('a page on any other origin', () => {
  it('is blocked by the browser: its fetch rejects', async () => {
    expect(await call(otherPage, edge.gateway.apiKey)).toEqual({ rejected: 'TypeError' });
  });
});
