// The built gateway (npm start) with TLS_* and UPSTREAM_TLS_* set: curl with the CA through mutual TLS, and a renewed pair taken up on SIGHUP.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestPki, type TestPki } from '../helpers/test-certificates.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startGatewayProcess, waitFor, waitUntilReady, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

let pki: TestPki;
let redis: PrivateRedis;
let backend: Server;
let gateway: GatewayProcess;
let env: Record<string, string>;
let listenerFiles: { certFile: string; keyFile: string };
let authority: ReturnType<TestPki['authority']>;

beforeAll(async () => {
  pki = createTestPki();
  authority = pki.authority('ca');
  const served = authority.issue({ name: 'backend' });
  const client = authority.issue({ name: 'gateway-client' });
  const listener = authority.issue({ name: 'listener' });
  // The files the gateway reads; a renewal writes over them.
  listenerFiles = { certFile: pki.write('live.pem', listener.cert), keyFile: pki.write('live.key', listener.key) };
  backend = createServer({ cert: served.cert, key: served.key, ca: authority.cert, requestCert: true, rejectUnauthorized: true }, (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  redis = await startRedis();
  env = {
    REDIS_URL: redis.url,
    UPSTREAM_URL: `https://localhost:${(backend.address() as AddressInfo).port}/v1`,
    UPSTREAM_TLS_CA_FILE: authority.certFile,
    UPSTREAM_TLS_CERT_FILE: client.certFile,
    UPSTREAM_TLS_KEY_FILE: client.keyFile,
    TLS_CERT_FILE: listenerFiles.certFile,
    TLS_KEY_FILE: listenerFiles.keyFile,
    // The renewal below is taken up by SIGHUP, not by the watch.
    CERTIFICATE_WATCH_MS: '0',
  };
  gateway = await startGatewayProcess(env);
  await waitUntilReady(gateway);
});
afterAll(async () => {
  await gateway?.stop();
  backend?.close();
  await redis?.stop();
  pki?.remove();
});

/** The fingerprint of the certificate a new connection to the public listener is served. */
async function servedFingerprint(): Promise<string> {
  const socket = connect({ port: gateway.port, host: '127.0.0.1', servername: 'localhost', ca: authority.cert });
  await new Promise((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  const fingerprint = socket.getPeerCertificate().fingerprint256;
  socket.destroy();
  return fingerprint;
}

it('serves curl with the CA over HTTPS, through mutual TLS to the backend', async () => {
  const created = await runKeysCli(['create', '--name', 'tls', '--environment', 'staging', '--json'], env);
  const key = (JSON.parse(created.stdout) as { key: string }).key;
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
    execFile(
      'curl',
      ['-sS', '--cacert', authority.certFile, '-H', `Authorization: Bearer ${key}`, '-w', ' %{http_code}', `https://localhost:${gateway.port}/v1/pets`],
      (error, out) => (error ? reject(error) : resolve({ stdout: out })),
    ),
  );
  expect(stdout).toBe('[] 200');
});

it('serves a renewed pair to new connections after SIGHUP', async () => {
  const renewed = authority.issue({ name: 'renewed' });
  const before = await servedFingerprint();
  copyFileSync(renewed.keyFile, listenerFiles.keyFile);
  copyFileSync(renewed.certFile, listenerFiles.certFile);
  const seen = gateway.output().length;
  gateway.child.kill('SIGHUP');
  await waitFor(async () => gateway.output().slice(seen).includes('"msg":"configuration reloaded"'));
  const after = await servedFingerprint();
  expect(after).not.toBe(before);
  expect(after).toBe(new X509Certificate(renewed.cert).fingerprint256);
});
