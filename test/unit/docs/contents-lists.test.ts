// Each docs page's contents list against its headings: every section and subsection listed, in order, nested as on the page.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headingSlug } from '../../helpers/markdown.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

/** Headings left out of a contents list: one runbook per alert, listed under "Runbooks" by the page's table. */
const NOT_LISTED = /^Runbook: /;

const PAGES = readdirSync(join(PROJECT_ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);

/** The page without its fenced code (a `## ` inside a shell sample is no heading). */
const prose = (page: string) => readFileSync(join(PROJECT_ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '');

/** The list before the first section: `- [Heading](#anchor)` lines, nested by two spaces. */
function contentsList(page: string): string[] {
  const lines = prose(page).split('\n');
  const end = lines.findIndex((line) => line.startsWith('## '));
  return lines.slice(0, end).filter((line) => /^( {2})*- \[[^\]]+\]\(#[^)]+\)$/.test(line));
}

/** What the list should say: each `##` and `###` heading, as the list writes it. */
function expectedList(page: string): string[] {
  return prose(page)
    .split('\n')
    .filter((line) => /^#{2,3} /.test(line))
    .map((line) => ({ depth: line.startsWith('### ') ? 1 : 0, heading: line.replace(/^#+ /, '').trim() }))
    .filter(({ heading }) => !NOT_LISTED.test(heading))
    .map(({ depth, heading }) => `${'  '.repeat(depth)}- [${heading}](#${headingSlug(heading)})`);
}

describe('docs contents lists', () => {
  it('covers every page with a contents list', () => {
    expect(PAGES.filter((page) => contentsList(page).length > 0)).toEqual(
      expect.arrayContaining(['docs/configuration.md', 'docs/operations.md', 'docs/performance.md', 'docs/reference.md']),
    );
  });

  it.each(PAGES.filter((page) => contentsList(page).length > 0))('%s lists every section and subsection, in order', (page) => {
    expect(contentsList(page)).toEqual(expectedList(page));
  });
});
