// A hostile key export is refused at its cost's bound: a 50 MB line after 16 KiB of it, a wrong pepper at the header.
import { execFile } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkExportFile } from '../../../src/auth/key-backup.ts';
import { MAX_EXPORT_LINE_BYTES } from '../../../src/auth/key-backup-file.ts';
import { scaled } from '../../../support/time-scale.ts';

const FINGERPRINT = 'hmac-sha256:0123456789abcdef';
const header = (fingerprint: string, keys: number) =>
  JSON.stringify({ format: 'petstore-gateway-keys', version: 1, pepperFingerprint: fingerprint, exportedAt: '2026-11-26T21:00:00.000Z', keys });
const KEY_LINE = JSON.stringify({
  keyHash: 'a'.repeat(64),
  id: 'key_one',
  consumer: 'acme',
  environments: ['production'],
  createdAt: '2026-11-01T09:00:00.000Z',
  revoked: false,
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'key-backup-file-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('checking a key export before Redis', () => {
  it('refuses a 50 MB line in under a second and under 100 MB of memory, naming the line', async () => {
    const file = join(dir, 'huge.jsonl');
    // Written a megabyte at a time: the test holds no 50 MB string, so the check's own peak is what is measured.
    const fd = openSync(file, 'w');
    writeSync(fd, `${header(FINGERPRINT, 1)}\n{"keyHash":"`);
    const megabyte = 'a'.repeat(1024 * 1024);
    for (let written = 0; written < 50; written++) writeSync(fd, megabyte);
    writeSync(fd, '"}\n');
    closeSync(fd);
    // In a process of its own: its peak RSS grows by what the check holds, measured from the moment the check starts.
    const checker = `
      const { checkExportFile } = await import(${JSON.stringify(join(import.meta.dirname, '../../../src/auth/key-backup.ts'))});
      const before = process.resourceUsage().maxRSS;
      const started = performance.now();
      const refusal = await checkExportFile(${JSON.stringify(file)}, ${JSON.stringify(FINGERPRINT)}).then(() => 'accepted', (error) => error.message);
      const ms = performance.now() - started;
      process.stdout.write(JSON.stringify({ refusal, ms, grewBytes: (process.resourceUsage().maxRSS - before) * 1024 }));
    `;
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--input-type=module', '-e', checker], { timeout: scaled(30_000) }, (error, out) => (error ? reject(error) : resolve(out))),
    );
    const { refusal, ms, grewBytes } = JSON.parse(stdout) as { refusal: string; ms: number; grewBytes: number };
    expect(refusal).toBe(`${file}, line 2: longer than ${MAX_EXPORT_LINE_BYTES} bytes, the most a line of a key export can be; nothing was written`);
    expect(ms).toBeLessThan(scaled(1000));
    expect(grewBytes).toBeLessThan(100 * 1024 * 1024);
    // What it measured (the figures before: 25.5 s and 1.35 GB).
    console.info(`50 MB line refused in ${ms.toFixed(1)} ms, peak RSS grew ${(grewBytes / 1024 / 1024).toFixed(1)} MB`);
  });

  it('refuses a file made with another pepper at its header, before reading a key line', async () => {
    const file = join(dir, 'other-pepper.jsonl');
    // The second line would be refused as damaged if it were read.
    writeFileSync(file, `${header('hmac-sha256:another', 1)}\nnot json\n`);
    await expect(checkExportFile(file, FINGERPRINT)).rejects.toThrow("the file's keys were made with another pepper than this CLI's");
  });

  it('accepts a line of exactly the bound, and reads CRLF lines', async () => {
    const file = join(dir, 'crlf.jsonl');
    const padded = `${KEY_LINE.slice(0, -1)}${' '.repeat(MAX_EXPORT_LINE_BYTES - KEY_LINE.length)}}`;
    expect(Buffer.byteLength(padded)).toBe(MAX_EXPORT_LINE_BYTES);
    writeFileSync(file, `${header(FINGERPRINT, 1)}\r\n${padded}\n`);
    expect((await checkExportFile(file, FINGERPRINT)).header.keys).toBe(1);
  });
});
