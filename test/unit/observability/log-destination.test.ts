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

/** Resolves once the file holds `expected`, as asynchronous writes land. */
async function eventually(expected: string): Promise<void> {
  for (let i = 0; i < 200 && written() !== expected; i++) await sleep(5);
  expect(written()).toBe(expected);
}

describe('log destination', () => {
  it('holds lines until a batch is full, then writes them in order', async () => {
    const destination = createLogDestination({ fd, batchBytes: 64, maxBufferedBytes: 1 << 20 });
    destination.write('{"n":1}\n');
    destination.write('{"n":2}\n');
    await sleep(20);
    expect(written()).toBe('');
    const lines = Array.from({ length: 10 }, (_, i) => `{"n":${i + 3}}\n`);
    for (const line of lines) destination.write(line);
    // 96 bytes in all: the first 64 or more are written, the rest wait for the next batch or flush.
    await sleep(20);
    const first = written();
    expect(first.length).toBeGreaterThanOrEqual(64);
    expect(first.endsWith('\n')).toBe(true);
    destination.flush();
    await eventually(['{"n":1}\n', '{"n":2}\n', ...lines].join(''));
  });

  it('writes everything held before flushSync returns', () => {
    const destination = createLogDestination({ fd, batchBytes: 1024, maxBufferedBytes: 1 << 20 });
    destination.write('{"msg":"last words"}\n');
    destination.flushSync();
    expect(written()).toBe('{"msg":"last words"}\n');
  });

  it('keeps multi-byte characters whole across batches', async () => {
    const destination = createLogDestination({ fd, batchBytes: 32, maxBufferedBytes: 1 << 20 });
    const lines = ['{"consumer":"Zoë"}\n', '{"consumer":"猫の店"}\n', '{"consumer":"🐕 walkers"}\n', '{"consumer":"plain"}\n'];
    for (const line of lines) destination.write(line);
    destination.flush();
    await eventually(lines.join(''));
  });

  it('writes a line longer than a batch whole, after the lines before it', async () => {
    const destination = createLogDestination({ fd, batchBytes: 16, maxBufferedBytes: 1 << 20 });
    const long = `{"msg":"${'x'.repeat(500)}"}\n`;
    destination.write('{"n":1}\n');
    destination.write(long);
    destination.write('{"n":2}\n');
    destination.flush();
    await eventually(`{"n":1}\n${long}{"n":2}\n`);
  });

  it('drops what would hold more than maxBufferedBytes while a write is pending, and keeps the lines whole', async () => {
    const destination = createLogDestination({ fd, batchBytes: 100, maxBufferedBytes: 250 });
    const line = `${'y'.repeat(99)}\n`;
    // Each line fills a batch. In one turn: the first is being written, the second waits (200 bytes
    // held), the third would make 300, so it and the rest are dropped.
    for (let i = 0; i < 10; i++) destination.write(line);
    destination.flush();
    await eventually(line.repeat(2));
    await sleep(50);
    expect(written()).toBe(line.repeat(2));
  });
});
