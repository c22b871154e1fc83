// Label values in /metrics: escaped exactly as prom-client escapes them, control characters as visible text, OpenMetrics HELP quotes escaped.
import { Counter, type OpenMetricsContentType, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExpositionRegistry, withEscapedHelpQuotes, withoutControlCharacters } from '../../../src/observability/exposition.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { renderOpenMetrics } from '../../../src/observability/open-metrics.ts';

/** Values the formats escape (`"`, `\`, the newline) or carry as they are (any other printable text). */
const PRINTABLE = ['q"b', 'back\\slash', 'new\nline', '\\"\n', 'café ☕ 名前', 'trailing\\'];

/** The same counter, one series per value, in `registry`. */
function counted<R extends Registry | Registry<OpenMetricsContentType>>(registry: R, values: readonly string[]): R {
  const counter = new Counter({ name: 'consumers_total', help: 'Calls by consumer.', labelNames: ['consumer'], registers: [registry] });
  for (const value of values) counter.inc({ consumer: value });
  return registry;
}

describe('printable label values', () => {
  it("are written in the Prometheus text format byte for byte as prom-client's own registry writes them", async () => {
    expect(await counted(new ExpositionRegistry(), PRINTABLE).metrics()).toBe(await counted(new Registry(), PRINTABLE).metrics());
  });

  it("are written in OpenMetrics byte for byte as prom-client's own OpenMetrics registry writes them", async () => {
    const openMetrics = new Registry<OpenMetricsContentType>();
    openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const oracle = counted(openMetrics, PRINTABLE);
    expect(await renderOpenMetrics(counted(new Registry(), PRINTABLE))).toBe(await oracle.metrics());
  });
});

describe('withoutControlCharacters', () => {
  it.each([
    ['NUL', 'a\u0000b', 'a\\\\u0000b'],
    ['ESC', '\u001b[31mred', '\\\\u001b[31mred'],
    ['CR', 'a\rb', 'a\\\\u000db'],
    ['tab', 'a\tb', 'a\\\\u0009b'],
    ['DEL', 'a\u007fb', 'a\\\\u007fb'],
    ['NEL (C1)', 'a\u0085b', 'a\\\\u0085b'],
    ['CSI (C1)', 'a\u009bb', 'a\\\\u009bb'],
    ['line separator', 'a\u2028b', 'a\\\\u2028b'],
    ['paragraph separator', 'a\u2029b', 'a\\\\u2029b'],
    ['a line feed, which only ends lines', 'a 1\nb 2\n', 'a 1\nb 2\n'],
    ['printable text', 'café ☕ "x" \\\\', 'café ☕ "x" \\\\'],
  ])('%s', (_name, text, written) => {
    expect(withoutControlCharacters(text)).toBe(written);
  });

  it('keeps control characters after an escaped backslash apart from it', async () => {
    const text = await counted(new ExpositionRegistry(), ['a\\\u0000']).metrics();
    expect(text).toContain('consumers_total{consumer="a\\\\\\\\u0000"} 1\n');
  });
});

describe("the gateway's /metrics", () => {
  it('writes a consumer named with control characters as visible text in both formats, the same series in each', async () => {
    const metrics = createMetrics({ environment: 'test', version: 't', sunsets: [], processMetrics: false });
    metrics.deprecatedCall('getPet', 'key_1', 'x\u0000\u001b[2J"\\\n\ry');
    const written =
      'petstore_gateway_deprecated_requests_total{operation="getPet",key_id="key_1",consumer="x\\\\u0000\\\\u001b[2J\\"\\\\\\n\\\\u000dy",environment="test"} 1';
    expect((await metrics.registry.metrics()).split('\n')).toContain(written);
    expect((await metrics.openMetrics()).split('\n')).toContain(written);
  });
});

describe('withEscapedHelpQuotes', () => {
  it("escapes a HELP line's quotes, which OpenMetrics requires, and leaves samples' escaped label values alone", () => {
    const text = '# HELP x_total Calls, key_id="other" past the cap.\n# TYPE x counter\nx_total{consumer="q\\"b"} 1\n# EOF\n';
    expect(withEscapedHelpQuotes(text)).toBe('# HELP x_total Calls, key_id=\\"other\\" past the cap.\n# TYPE x counter\nx_total{consumer="q\\"b"} 1\n# EOF\n');
  });

  it("is applied to the gateway's OpenMetrics, not to its Prometheus text, where HELP quotes are plain text", async () => {
    const metrics = createMetrics({ environment: 'test', version: 't', sunsets: [], processMetrics: false });
    const help = (text: string) => text.split('\n').find((line) => line.startsWith('# HELP petstore_gateway_deprecated_requests'));
    expect(help(await metrics.openMetrics())).toBe(
      '# HELP petstore_gateway_deprecated_requests Requests to deprecated operations by consumer; past the consumer cap, further consumers count as key_id=\\"other\\".',
    );
    expect(help(await metrics.registry.metrics())).toBe(
      '# HELP petstore_gateway_deprecated_requests_total Requests to deprecated operations by consumer; past the consumer cap, further consumers count as key_id="other".',
    );
  });
});
