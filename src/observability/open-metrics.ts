// The one registry's metrics in the OpenMetrics text format too (the format that carries exemplars), the Prometheus text format left as it is.
import { type Metric, type OpenMetricsContentType, Registry } from 'prom-client';
import { withEscapedHelpQuotes, withoutControlCharacters } from './exposition.ts';

/** The Content-Type of renderOpenMetrics's text. */
export const OPENMETRICS_CONTENT_TYPE: string = Registry.OPENMETRICS_CONTENT_TYPE;

/** What prom-client reads from a metric to write it: the values of getForPromString (histograms), else of get. */
interface Renderable {
  name: string;
  get(): Promise<{ name: string; type: string }>;
  getForPromString?(): Promise<{ name: string; type: string }>;
}

/**
 * Renders `registry` as OpenMetrics 1.0 (`# EOF`, `_total` samples, exemplars). Not by `setContentType` (the registry
 * is shared by concurrent scrapes) nor a second registry of the same metrics: prom-client's OpenMetrics rendering drops
 * `_total` from each counter's name, losing it for the next Prometheus scrape. Each scrape gets a registry of views.
 */
export async function renderOpenMetrics(registry: Registry): Promise<string> {
  const scrape = new Registry<OpenMetricsContentType>();
  // This scrape's own registry: setting its content type races with nothing.
  scrape.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const metric of registry.getMetricsAsArray() as unknown as Renderable[]) {
    const read = metric.getForPromString === undefined ? () => metric.get() : () => metric.getForPromString!();
    const view = {
      // No `type`: the registry renames a counter it sees by its type; the family name is the view's to give.
      name: metric.name,
      get: async () => {
        const data = await read();
        return data.type === 'counter' ? { ...data, name: data.name.replace(/_total$/, '') } : data;
      },
    };
    // prom-client writes any object with a name and get(); its types name only its own metric classes.
    scrape.registerMetric(view as unknown as Metric);
  }
  // prom-client writes label values as the format requires, but neither HELP's quotes nor control characters (exposition.ts).
  return withEscapedHelpQuotes(withoutControlCharacters(await scrape.metrics()));
}
