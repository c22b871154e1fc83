// The listener's certificate replaced without a restart: on reload under load with no failed request, a bad pair refused, and by the file watch.
import { renameSync, writeFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { createSecretVolume } from '../helpers/secret-volume.ts';
import { fingerprintOf, notAfterSeconds, servedFingerprint } from '../helpers/tls-peers.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

const ENVIRONMENT = { environment: 'production' } as const;
// Enough for every request of a load loop: a 429 would be a failure the test did not mean to cause.
const UNLIMITED = { rateLimit: { limits: { production: { default: 1_000_000 }, staging: { default: 1_000_000 } } } };
const LISTENER_EXPIRY = seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'listener', ...ENVIRONMENT });

let pki: TestPki;
let ca: TestAuthority;
let first: IssuedCertificate;
let second: IssuedCertificate;
let upstream: ScriptedUpstream;

beforeAll(async () => {
  pki = createTestPki();
  ca = pki.authority('rotation-ca');
  // Different lifetimes: the expiry series tells which one is served.
  first = ca.issue({ name: 'listener-first', days: 20 });
  second = ca.issue({ name: 'listener-second', days: 50 });
  upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]'));
});
afterAll(async () => {
  await upstream.close();
  pki.remove();
});

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** The files the listener is configured with, written with `pair` (their paths never change: a renewal rewrites them). */
function liveFiles(name: string, pair: IssuedCertificate): { certFile: string; keyFile: string } {
  return { certFile: pki.write(`${name}.pem`, pair.cert), keyFile: pki.write(`${name}.key`, pair.key) };
}

/** Replaces both files, each by a rename, as an editor or a copy tool that writes a temporary file does. */
function replaceFiles(files: { certFile: string; keyFile: string }, cert: string, key: string): void {
  writeFileSync(`${files.keyFile}.new`, key);
  writeFileSync(`${files.certFile}.new`, cert);
  renameSync(`${files.keyFile}.new`, files.keyFile);
  renameSync(`${files.certFile}.new`, files.certFile);
}

async function listening(files: { certFile: string; keyFile: string }, extra: Record<string, unknown> = {}): Promise<{ gateway: TestGateway; port: number }> {
  const gateway = buildTestGateway({
    upstreamUrl: upstream.baseUrl,
    env: { PORT: '0', ADMIN_PORT: '0' },
    overrides: { listen: { tls: files }, ...UNLIMITED, ...extra },
  });
  const running = await gateway.listen();
  stop = () => running.shutdown('test over');
  return { gateway, port: running.port };
}

async function scrape(gateway: TestGateway): Promise<Map<string, number>> {
  return parseExposition(await gateway.scrape());
}

const reloads = (result: 'success' | 'failure') => seriesKey('petstore_gateway_config_reloads_total', { result, ...ENVIRONMENT });

interface Answer {
  status: number;
  /** The certificate the answering connection was served, and whether the request reused a pooled connection. */
  fingerprint: string;
  reused: boolean;
  socket: TLSSocket;
}

/** GET /v1/pets over HTTPS; `agent` false: a connection of its own. */
function get(port: number, apiKey: string, agent: Agent | false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        servername: 'localhost',
        path: '/v1/pets',
        headers: { Authorization: `Bearer ${apiKey}`, ...(agent === false ? { Connection: 'close' } : {}) },
        agent,
        ca: ca.cert,
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint, reused: req.reusedSocket, socket }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('a reload under load', () => {
  it('rotates the listener certificate with no failed request: new connections get the new one, keep-alive ones carry on', async () => {
    const files = liveFiles('live-rotation', first);
    const { gateway, port } = await listening(files);
    const agent = new Agent({ keepAlive: true, maxSockets: 4, ca: ca.cert });
    const failures: string[] = [];
    const answers: Array<Answer & { afterReload: boolean }> = [];
    const closedWhileRunning = new Set<TLSSocket>();
    const watched = new Set<TLSSocket>();
    let reloaded = false;
    let running = true;

    const loop = async (pooled: boolean) => {
      while (running) {
        const sentAfterReload = reloaded;
        try {
          const answer = await get(port, gateway.apiKey, pooled ? agent : false);
          if (answer.status !== 200) failures.push(`status ${answer.status}`);
          answers.push({ ...answer, afterReload: sentAfterReload });
          if (pooled && !watched.has(answer.socket)) {
            watched.add(answer.socket);
            answer.socket.once('close', () => {
              if (running) closedWhileRunning.add(answer.socket);
            });
          }
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
      }
    };
    const loops = [true, true, true, true, false, false].map((pooled) => loop(pooled));
    try {
      await waitFor(async () => answers.length >= 60, 10_000, 10);
      replaceFiles(files, second.cert, second.key);
      expect(await gateway.reload()).toMatchObject({ result: 'success' });
      reloaded = true;
      const newOnes = () => answers.filter((answer) => answer.afterReload && !answer.reused && answer.fingerprint === fingerprintOf(second.cert));
      const pooledAfter = () => answers.filter((answer) => answer.afterReload && answer.reused);
      await waitFor(async () => newOnes().length >= 20 && pooledAfter().length >= 60, 15_000, 10);
    } finally {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    }

    expect(failures).toEqual([]);
    expect(closedWhileRunning.size).toBe(0);
    // Every connection opened after the reload was served the new certificate.
    const openedAfter = answers.filter((answer) => answer.afterReload && !answer.reused);
    expect(new Set(openedAfter.map((answer) => answer.fingerprint))).toEqual(new Set([fingerprintOf(second.cert)]));
    // The keep-alive connections made before it kept serving after it, on the certificate they were handed.
    const carriedOver = answers.filter((answer) => answer.afterReload && answer.reused && answer.fingerprint === fingerprintOf(first.cert));
    expect(carriedOver.length).toBeGreaterThan(0);
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(second.cert));
  });

  it('updates the listener expiry series to the new certificate', async () => {
    const files = liveFiles('live-expiry', first);
    const { gateway } = await listening(files);
    expect((await scrape(gateway)).get(LISTENER_EXPIRY)).toBe(notAfterSeconds(first.cert));
    replaceFiles(files, second.cert, second.key);
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    expect((await scrape(gateway)).get(LISTENER_EXPIRY)).toBe(notAfterSeconds(second.cert));
  });

  it('logs the certificate in force, at start and after the reload, by its fingerprint and notAfter', async () => {
    const files = liveFiles('live-logged', first);
    const { gateway } = await listening(files);
    replaceFiles(files, second.cert, second.key);
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    const logged = gateway.logs.filter((line) => line.msg === 'TLS certificates in force on the listeners').map((line) => line.certificates);
    const inForce = (pem: string) => ({ listener: { fingerprint: fingerprintOf(pem), notAfter: new Date(notAfterSeconds(pem) * 1000).toISOString() } });
    expect(logged).toEqual([inForce(first.cert), inForce(second.cert)]);
  });
});

describe('a reload with the admin listener over TLS', () => {
  it('serves new admin connections the new pair and updates the admin expiry series', async () => {
    const files = liveFiles('live-admin', first);
    const gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { listen: { adminTls: files } } });
    const running = await gateway.listen();
    stop = () => running.shutdown('test over');
    const adminExpiry = seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'admin', ...ENVIRONMENT });
    expect(await servedFingerprint(running.adminPort, ca.cert)).toBe(fingerprintOf(first.cert));
    replaceFiles(files, second.cert, second.key);
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    expect(await servedFingerprint(running.adminPort, ca.cert)).toBe(fingerprintOf(second.cert));
    expect((await scrape(gateway)).get(adminExpiry)).toBe(notAfterSeconds(second.cert));
  });
});

describe('a reload that names other listener files', () => {
  it('leaves them for a restart (needRestart) and keeps serving the files it started with', async () => {
    const files = liveFiles('live-paths', first);
    const other = liveFiles('live-paths-other', second);
    const gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      env: { PORT: '0', ADMIN_PORT: '0' },
      overrides: { listen: { tls: files }, ...UNLIMITED },
      reloadOverrides: () => ({ listen: { tls: other }, ...UNLIMITED }),
    });
    const running = await gateway.listen();
    stop = () => running.shutdown('test over');
    expect(await gateway.reload()).toMatchObject({ result: 'success', needRestart: expect.arrayContaining(['listen.tls.certFile', 'listen.tls.keyFile']) });
    expect(await servedFingerprint(running.port, ca.cert)).toBe(fingerprintOf(first.cert));
  });
});

describe('a reload with a bad pair', () => {
  it.each([
    ['a certificate file that does not parse', () => ({ cert: 'not a certificate\n', key: second.key })],
    ['a key file that does not parse', () => ({ cert: second.cert, key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' })],
    ['a key that does not match the certificate', () => ({ cert: second.cert, key: first.key })],
  ])('is refused, counted as a failed reload, and the old pair keeps serving: %s', async (_case, pair) => {
    const files = liveFiles('live-bad', first);
    const { gateway, port } = await listening(files);
    const { cert, key } = pair();
    replaceFiles(files, cert, key);
    const outcome = await gateway.reload();
    expect(outcome).toMatchObject({ result: 'failure', reason: expect.stringMatching(/TLS_CERT_FILE|TLS_KEY_FILE|listen\.tls/) });
    const after = await scrape(gateway);
    expect(after.get(reloads('failure'))).toBe(1);
    expect(after.get(reloads('success')) ?? 0).toBe(0);
    expect(after.get(LISTENER_EXPIRY)).toBe(notAfterSeconds(first.cert));
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));
    expect((await get(port, gateway.apiKey, false)).status).toBe(200);
  });
});

describe('the certificate watch (certificates.watchIntervalMs)', () => {
  const WATCH = { certificates: { watchIntervalMs: 200 } };

  it('serves files replaced on disk to new connections within a few intervals, without a reload being asked', async () => {
    const files = liveFiles('live-watched', first);
    const { gateway, port } = await listening(files, WATCH);
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));
    replaceFiles(files, second.cert, second.key);
    await waitFor(async () => (await servedFingerprint(port, ca.cert)) === fingerprintOf(second.cert), 5000, 50);
    expect((await scrape(gateway)).get(reloads('success'))).toBeGreaterThanOrEqual(1);
    expect((await scrape(gateway)).get(LISTENER_EXPIRY)).toBe(notAfterSeconds(second.cert));
  });

  it('follows a Kubernetes Secret volume: the files are links through ..data, swapped at once to a new directory', async () => {
    const volume = createSecretVolume(join(pki.dir, 'secret-volume'), { 'tls.crt': first.cert, 'tls.key': first.key });
    const { gateway, port } = await listening({ certFile: volume.path('tls.crt'), keyFile: volume.path('tls.key') }, WATCH);
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    await waitFor(async () => (await servedFingerprint(port, ca.cert)) === fingerprintOf(second.cert), 5000, 50);
    // One atomic change: never a half-replaced pair refused on the way.
    expect((await scrape(gateway)).get(reloads('failure')) ?? 0).toBe(0);
  });

  it('refuses a bad pair it finds once, keeps serving the old one, and takes up the good pair that follows', async () => {
    const volume = createSecretVolume(join(pki.dir, 'secret-volume-bad'), { 'tls.crt': first.cert, 'tls.key': first.key });
    const { gateway, port } = await listening({ certFile: volume.path('tls.crt'), keyFile: volume.path('tls.key') }, WATCH);
    volume.update({ 'tls.crt': second.cert, 'tls.key': first.key });
    await waitFor(async () => (await scrape(gateway)).get(reloads('failure')) === 1, 5000, 50);
    // Five more intervals over the same bytes: a change is reloaded once, not retried on every look.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await scrape(gateway)).get(reloads('failure'))).toBe(1);
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));

    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    await waitFor(async () => (await servedFingerprint(port, ca.cert)) === fingerprintOf(second.cert), 5000, 50);
  });

  it('clears a refusal when the pair in force is put back, within an interval and without a signal', async () => {
    const volume = createSecretVolume(join(pki.dir, 'secret-volume-restored'), { 'tls.crt': first.cert, 'tls.key': first.key });
    const { gateway, port } = await listening({ certFile: volume.path('tls.crt'), keyFile: volume.path('tls.key') }, WATCH);
    const lastReloadOk = seriesKey('petstore_gateway_config_last_reload_successful', ENVIRONMENT);
    volume.update({ 'tls.crt': second.cert, 'tls.key': first.key });
    await waitFor(async () => (await scrape(gateway)).get(lastReloadOk) === 0, 5000, 50);
    volume.update({ 'tls.crt': first.cert, 'tls.key': first.key });
    await waitFor(async () => (await scrape(gateway)).get(lastReloadOk) === 1, 5000, 50);
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));
  });

  it('leaves the files alone when the interval is 0: no reload happens by itself', async () => {
    const files = liveFiles('live-unwatched', first);
    const { gateway, port } = await listening(files, { certificates: { watchIntervalMs: 0 } });
    replaceFiles(files, second.cert, second.key);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await servedFingerprint(port, ca.cert)).toBe(fingerprintOf(first.cert));
    expect((await scrape(gateway)).get(reloads('success')) ?? 0).toBe(0);
  });
});
