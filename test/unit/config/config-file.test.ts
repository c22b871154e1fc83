// readConfigFile: a syntax error is told by line, column and the key nearest it, never by an excerpt of the file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfigFile } from '../../../src/config/config-file.ts';

const SECRET = 's3cret-value-9';
const dir = mkdtempSync(join(tmpdir(), 'config-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fileWith(text: string): string {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

describe('readConfigFile', () => {
  it.each([
    [
      'an unclosed quote',
      `redis:\n  url: redis://x\n  password: "${SECRET}\n  keyPrefix: a\n`,
      'line 5, column 1, at key redis.password: a quote, bracket or brace not closed, or a missing ":"',
    ],
    [
      'a value holding ": "',
      `redis:\n  password: ${SECRET}: more\n`,
      'line 2, column 13, at key redis.password: a second ": " on one line (quote a value that holds ": ")',
    ],
    [
      'an unclosed flow mapping in a list',
      `versions:\n  - document: a\n    upstreams: {staging: ${SECRET}\n`,
      'line 4, column 1, at key versions.0.upstreams: bad indentation, or a [ or { not closed',
    ],
    ['a key written twice', `listen:\n  port: 1\nlisten:\n  port: 2\n`, 'line 3, column 1, at key listen: a key written twice in one mapping'],
  ])('names the line, column and key of %s, without quoting the file', (_what, text, where) => {
    const file = fileWith(text);
    let message = '';
    try {
      readConfigFile(file);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe(`${file} is not valid YAML: ${where}`);
    expect(message).not.toContain(SECRET);
  });

  it('names an unreadable file by its error code, not a message repeating the path', () => {
    expect(() => readConfigFile(join(dir, 'missing.yaml'))).toThrow(`${join(dir, 'missing.yaml')} could not be read (ENOENT)`);
  });

  it('reads an empty file as no settings', () => {
    expect(readConfigFile(fileWith(''))).toEqual({});
  });
});
