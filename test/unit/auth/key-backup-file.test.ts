// A hostile key export is refused at its cost's bound: a 50 MB line after 16 KiB of it, a wrong pepper at the header.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkExportFile } from '../../../src/auth/key-backup.ts';
import { MAX_EXPORT_LINE_BYTES } from '../../../src/auth/key-backup-file.ts';

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
    writeFileSync(file, `${header(FINGERPRINT, 1)}\n{"keyHash":"${'a'.repeat(50 * 1024 * 1024)}"}\n`);
    const rssBefore = process.resourceUsage().maxRSS;
    const started = performance.now();
    await expect(checkExportFile(file, FINGERPRINT)).rejects.toThrow(
      `${file}, line 2: longer than ${MAX_EXPORT_LINE_BYTES} bytes, the most a line of a key export can be; nothing was written`,
    );
    expect(performance.now() - started).toBeLessThan(1000);
    // maxRSS is in KiB: the process's peak grew by less than 100 MB.
    expect((process.resourceUsage().maxRSS - rssBefore) * 1024).toBeLessThan(100 * 1024 * 1024);
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
