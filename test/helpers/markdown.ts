// Reads the repository's Markdown as GitHub renders it: the anchors a page offers, its links, its tables.

/** The page's lines outside fenced code blocks (a `# comment` in a shell block is no heading). */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) fence = marker;
    else if (fence && marker?.startsWith(fence)) fence = undefined;
    else if (fence === undefined) lines.push(line);
  }
  return lines;
}

/** GitHub's slug of a heading's text (github-slugger): lower case, punctuation dropped, each space a hyphen. */
export function headingSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text, not its target
    .replace(/<[^>]+>/g, '') // inline HTML
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replaceAll(' ', '-');
}

/**
 * Every fragment a link may name in this page: each heading's slug (a repeated one gets -1, -2… as on
 * GitHub) and every explicit `id` or `name` of inline HTML (`<a id="…"></a>`).
 */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = headingSlug(heading);
      const times = seen.get(slug) ?? 0;
      seen.set(slug, times + 1);
      anchors.add(times === 0 ? slug : `${slug}-${times}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*?\b(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

/** The target of every inline Markdown link and image outside code (`[text](target)`, its text over lines or not), in page order. */
export function linksOf(markdown: string): string[] {
  const prose = proseLines(markdown)
    .join('\n')
    .replace(/`[^`]*`/g, 'code');
  return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
}

/** One table row as its cells under their header's names. */
export type TableRow = Readonly<Record<string, string>>;

/** The rows of every table whose header has all of `columns`, cells trimmed, in page order. */
export function tableRows(markdown: string, columns: readonly string[]): TableRow[] {
  const lines = proseLines(markdown);
  const rows: TableRow[] = [];
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((cell) => cell.trim());
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || !/^\s*\|?\s*:?-{3,}/.test(lines[i + 1]!)) continue;
    const header = cells(lines[i]!);
    if (!columns.every((column) => header.includes(column))) continue;
    for (let j = i + 2; j < lines.length && lines[j]!.trim().startsWith('|'); j++) {
      const row = cells(lines[j]!);
      rows.push(Object.fromEntries(header.map((name, k) => [name, row[k] ?? ''])));
    }
  }
  return rows;
}

/** The text of each code span in `cell` (`` `a` or `b` `` → ['a', 'b']). */
export function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
}
