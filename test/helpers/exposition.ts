// Reads a Prometheus text exposition into `name{label="value",...}` → value, labels sorted by name.
export function parseExposition(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match) throw new Error(`unreadable exposition line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, name, value]) => `${name}="${value}"`).sort();
    series.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return series;
}

/** The series key for a metric and labels, in parseExposition's form. */
export function seriesKey(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .sort();
  return `${name}{${parts.join(',')}}`;
}
