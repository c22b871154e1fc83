// watchCertificates: changed bytes run one reload; a refused change is not retried until the bytes change again.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { certificateDigests, watchCertificates, type CertificateWatch } from '../../../src/wiring/certificate-watch.ts';

const dir = mkdtempSync(join(tmpdir(), 'certificate-watch-'));
const cert = join(dir, 'tls.crt');
const key = join(dir, 'tls.key');
let watch: CertificateWatch | undefined;
afterEach(() => {
  watch?.stop();
  vi.useRealTimers();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts a watch on the two files, its reloads answered from `outcomes` in turn. */
function start(outcomes: boolean[]): { reloads: () => number } {
  let reloads = 0;
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  watch = watchCertificates({
    files: () => [cert, key],
    baseline: certificateDigests([cert, key]),
    intervalMs: 1000,
    reload: async () => outcomes[reloads++] ?? true,
  });
  return { reloads: () => reloads };
}

/** One interval, then long enough for the file reads it starts (real I/O; only the interval is faked). */
async function tick(): Promise<void> {
  vi.advanceTimersByTime(1000);
  await new Promise((resolve) => setTimeout(resolve, 25));
}

describe('watchCertificates', () => {
  it('does nothing while the bytes stay the same', async () => {
    writeFileSync(cert, 'cert 1');
    writeFileSync(key, 'key 1');
    const { reloads } = start([]);
    await tick();
    await tick();
    expect(reloads()).toBe(0);
  });

  it('reloads once when the bytes change', async () => {
    writeFileSync(cert, 'cert 1');
    writeFileSync(key, 'key 1');
    const { reloads } = start([true]);
    writeFileSync(cert, 'cert 2');
    writeFileSync(key, 'key 2');
    await tick();
    await tick();
    expect(reloads()).toBe(1);
  });

  it('tries a refused change once, and again when the bytes change again', async () => {
    writeFileSync(cert, 'cert 1');
    writeFileSync(key, 'key 1');
    const { reloads } = start([false, true]);
    // The certificate written before its key: the reload refuses the mismatched pair.
    writeFileSync(cert, 'cert 2');
    await tick();
    await tick();
    expect(reloads()).toBe(1);
    writeFileSync(key, 'key 2');
    await tick();
    await tick();
    expect(reloads()).toBe(2);
  });

  it('reloads when the pair in force is put back after a refused change, which clears the refusal', async () => {
    writeFileSync(cert, 'cert 1');
    writeFileSync(key, 'key 1');
    const { reloads } = start([false, true]);
    writeFileSync(cert, 'cert 2');
    await tick();
    expect(reloads()).toBe(1);
    // The operator restores the certificate in force: the bytes match the pair served, not the pair last tried.
    writeFileSync(cert, 'cert 1');
    await tick();
    await tick();
    expect(reloads()).toBe(2);
  });

  it('counts a file that went missing as a change', async () => {
    writeFileSync(cert, 'cert 1');
    writeFileSync(key, 'key 1');
    const { reloads } = start([false]);
    rmSync(key);
    await tick();
    expect(reloads()).toBe(1);
  });
});
