// The process's log destination: lines gathered into batches, written whole and in order, nothing lost on a flush.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogDestination } from '../../../src/observability/log-destination.ts';

let dir: string;
let file: string;
let fd: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'log-destination-'));
  file = join(dir, 'out.log');
  fd = openSync(file, 'a');
});
afterEach(() => {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

const written = () => readFileSync(file, 'utf8');

describe('log destination', () => {
  it('holds lines until a batch has gathered, then writes them in order', async () => {
    const destination = createLogDestination({ fd, batchBytes: 64, maxBufferedBytes: 1 << 20 });
    destination.write('{"n":1}\n');
    destination.write('{"n":2}\n');
    await sleep(20);
    expect(written()).toBe('');
    const lines = Array.from({ length: 7 }, (_, i) => `{"n":${i + 3}}\n`);
    for (const line of lines) destination.write(line);
    const all = ['{"n":1}\n', '{"n":2}\n', ...lines].join('');
    // 72 bytes gathered: the first 64 (eight whole lines) are written without a flush, the last line waits.
    for (let i = 0; i < 200 && written() === ''; i++) await sleep(5);
    await sleep(20);
    expect(written()).toBe(all.slice(0, 64));
    await destination.writeAll(1000);
    expect(written()).toBe(all);
  });

  it('writes a partial batch on flush, without waiting for more', async () => {
    const destination = createLogDestination({ fd, batchBytes: 1024, maxBufferedBytes: 1 << 20 });
    destination.write('{"n":1}\n');
    destination.flush();
    for (let i = 0; i < 200 && written() === ''; i++) await sleep(5);
    expect(written()).toBe('{"n":1}\n');
  });

  it('writes everything waiting before flushSync returns', () => {
    const destination = createLogDestination({ fd, batchBytes: 1024, maxBufferedBytes: 1 << 20 });
    destination.write('{"msg":"last"}\n');
    destination.write('{"msg":"words"}\n');
    destination.flushSync();
    expect(written()).toBe('{"msg":"last"}\n{"msg":"words"}\n');
  });

  it('keeps multi-byte characters whole across batches', async () => {
    const destination = createLogDestination({ fd, batchBytes: 32, maxBufferedBytes: 1 << 20 });
    const lines = ['{"consumer":"Zoë"}\n', '{"consumer":"猫の店"}\n', '{"consumer":"🐕 walkers"}\n', '{"consumer":"plain"}\n'];
    for (const line of lines) destination.write(line);
    await destination.writeAll(1000);
    expect(written()).toBe(lines.join(''));
  });

  it('writes a line longer than a batch whole, between the lines around it', async () => {
    const destination = createLogDestination({ fd, batchBytes: 16, maxBufferedBytes: 1 << 20 });
    const long = `{"msg":"${'x'.repeat(500)}"}\n`;
    destination.write('{"n":1}\n');
    destination.write(long);
    destination.write('{"n":2}\n');
    await destination.writeAll(1000);
    expect(written()).toBe(`{"n":1}\n${long}{"n":2}\n`);
  });

  it('drops whole lines rather than hold more than maxBufferedBytes while a write is under way', async () => {
    const destination = createLogDestination({ fd, batchBytes: 100, maxBufferedBytes: 250 });
    const line = `${'y'.repeat(99)}\n`;
    // In one turn: the first line fills a batch and its write starts, the second waits (200 bytes
    // held), the third would make 300, so it and the rest are dropped.
    for (let i = 0; i < 10; i++) destination.write(line);
    await destination.writeAll(1000);
    expect(written()).toBe(line.repeat(2));
  });
});
