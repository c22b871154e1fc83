// `npm run shadow -- report` for people: per operation its results, its differences and its noise as tables.
import type { ShadowReportBody } from '../shadow/report-model.ts';
import { printable } from './printable.ts';

/** Cells padded to their column's widest; counts right-aligned. */
function columns(rows: ReadonlyArray<readonly string[]>, numeric: ReadonlySet<number>): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => cells[column]!.length)));
  return rows.map((cells) =>
    cells
      .map((cell, column) => (numeric.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** The report for people: per operation its results, then its differences and its noise as tables; text from Redis escaped. */
export function shadowReportTable(report: ShadowReportBody): string {
  const lines = [`shadow report from ${report.from} to ${report.to}`];
  if (report.operations.length === 0) return `${lines[0]}\nno shadowed request in this range\n`;
  for (const operation of report.operations) {
    const { results } = operation;
    const share = operation.comparisons === 0 ? '' : ` (${((100 * results.differ) / operation.comparisons).toFixed(1)}% differ)`;
    lines.push(
      '',
      `${printable(operation.operation)}: ${operation.comparisons} compared${share}: match ${results.match}, differ ${results.differ}, staging_error ${results.staging_error}, staging_off_contract ${results.staging_off_contract}; skipped ${results.skipped}`,
    );
    for (const [title, list] of [
      ['differences', operation.differences],
      ['noise', operation.noise],
    ] as const) {
      if (list.length === 0) {
        lines.push(`  ${title}: none`);
        continue;
      }
      lines.push(`  ${title}:`);
      const rows = [
        ['POINTER', 'KIND', 'COUNT', 'FIRST SEEN', 'LAST SEEN'],
        ...list.map((entry) => [printable(entry.pointer), entry.kind, String(entry.count), entry.firstSeen, entry.lastSeen]),
      ];
      lines.push(...columns(rows, new Set([2])).map((line) => `    ${line}`));
    }
    if (operation.learntNoise.length > 0)
      lines.push(
        `  learnt as noise: ${operation.learntNoise.map((entry) => `${printable(entry.pointer)} ${entry.kind ?? 'any kind'} (${entry.sightings} sightings)`).join(', ')}`,
      );
    if (operation.unlisted > 0) lines.push(`  unlisted: ${operation.unlisted} differences past the pointers kept per hour`);
  }
  return `${lines.join('\n')}\n`;
}
