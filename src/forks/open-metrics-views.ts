// A registry's metrics in OpenMetrics through per-scrape views, so the shared registry's counters keep `_total` for Prometheus.
import { type Metric, type OpenMetricsContentType, Registry } from 'prom-client';

/** The Content-Type of renderOpenMetricsViews's text. */
export const OPENMETRICS_CONTENT_TYPE: string = Registry.OPENMETRICS_CONTENT_TYPE;

/** What the registry reads from a metric: its family name and get(), the declared read of its values. */
interface Readable {
  name: string;
  get(): Promise<{ name: string; type: string }>;
}

/**
 * Renders `registry` as OpenMetrics 1.0 (`# EOF`, `_total` samples, exemplars), unescaped as prom-client writes it. Not by
 * `setContentType` (the registry is shared by concurrent scrapes) nor a second registry of the same metrics: prom-client's
 * OpenMetrics rendering drops `_total` from each counter's name, losing it for the next Prometheus scrape. Each scrape
 * gets a registry of views instead.
 */
export async function renderOpenMetricsViews(registry: Registry): Promise<string> {
  const scrape = new Registry<OpenMetricsContentType>();
  // This scrape's own registry: setting its content type races with nothing.
  scrape.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  // getMetricsAsArray's declared type is the metrics' data, not the metric objects it returns.
  for (const metric of registry.getMetricsAsArray() as unknown as Readable[]) {
    const view = {
      // No `type`: the registry renames a counter it sees by its type; the family name is the view's to give.
      name: metric.name,
      // get(), the declared read: for a histogram it is the registry's own getForPromString with `le` splayed into the
      // labels, which the registry writes in the same order.
      get: async () => {
        const data = await metric.get();
        return data.type === 'counter' ? { ...data, name: data.name.replace(/_total$/, '') } : data;
      },
    };
    // Undeclared: prom-client's registry writes any object with a name and get(); its types name only its own classes.
    scrape.registerMetric(view as unknown as Metric);
  }
  return scrape.metrics();
}
