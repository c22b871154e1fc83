// The limiter is the gateway's, in one folder: nothing under src/ goes through express-rate-limit (decision 0026).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');
const SRC = join(ROOT, 'src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

const sources = sourceFiles(SRC).map((file) => ({ path: relative(ROOT, file), text: readFileSync(file, 'utf8') }));
const matching = (pattern: RegExp) => sources.filter(({ text }) => pattern.test(text)).map(({ path }) => path);

describe('the limiter', () => {
  it('imports nothing of express-rate-limit anywhere under src/', () => {
    expect(matching(/from ['"]express-rate-limit['"]|import\(['"]express-rate-limit['"]\)/)).toEqual([]);
  });

  it('reads no req.rateLimit and passes nothing through a resetTime', () => {
    expect(matching(/\breq\.rateLimit\b|\bresetTime\b/)).toEqual([]);
  });

  it('has its stores and their scripts in src/limits/ alone', () => {
    const outside = matching(/implements LimitStore|rateLimitIncrement|rateLimitAdd/).filter((path) => !path.startsWith('src/limits/'));
    expect(outside).toEqual([]);
  });

  it('does not need express-rate-limit at run time: a development dependency, the fields’ oracle', () => {
    const { dependencies, devDependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    expect(dependencies).not.toHaveProperty('express-rate-limit');
    expect(devDependencies).toHaveProperty('express-rate-limit');
  });
});
