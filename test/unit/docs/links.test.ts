// Every relative link of the README and the docs tree lands on a file that exists, and on an anchor that page has.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, linksOf } from '../../helpers/markdown.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

const PAGES = [
  'README.md',
  'CHANGELOG.md',
  'CONTRIBUTING.md',
  'SECURITY.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.md'))
    .map((path) => `docs/${path.split(sep).join('/')}`)
    .sort(),
];

const read = (page: string) => readFileSync(join(PROJECT_ROOT, page), 'utf8');

/** Why `target`, linked from `page`, does not resolve; undefined when it does. External links (a scheme) are not followed. */
function brokenBecause(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [path = '', fragment] = target.split('#', 2);
  const file = path === '' ? join(PROJECT_ROOT, page) : join(path.startsWith('/') ? PROJECT_ROOT : dirname(join(PROJECT_ROOT, page)), decodeURIComponent(path));
  if (relative(PROJECT_ROOT, file).startsWith('..')) return 'points outside the repository';
  if (!existsSync(file)) return 'no such file';
  if (fragment === undefined || !file.endsWith('.md')) return undefined;
  return anchorsOf(readFileSync(file, 'utf8')).has(fragment) ? undefined : `no anchor #${fragment} there`;
}

describe('Markdown links', () => {
  it('covers the README, the project files and every page under docs/', () => {
    expect(PAGES).toEqual(expect.arrayContaining(['README.md', 'docs/configuration.md', 'docs/operations.md', 'docs/reference.md']));
  });

  it.each(PAGES)('%s links only to files and anchors that exist', (page) => {
    const broken = linksOf(read(page))
      .map((target) => ({ target, why: brokenBecause(page, target) }))
      .filter((link) => link.why !== undefined)
      .map((link) => `${link.target}: ${link.why}`);
    expect(broken).toEqual([]);
  });
});
