// The one registry's metrics in the OpenMetrics text format too (the format that carries exemplars), the Prometheus text format left as it is.
import type { Registry } from 'prom-client';
import { OPENMETRICS_CONTENT_TYPE, renderOpenMetricsViews } from '../forks/open-metrics-views.ts';
import { withEscapedHelpQuotes, withoutControlCharacters } from './exposition.ts';

export { OPENMETRICS_CONTENT_TYPE };

/** Renders `registry` as OpenMetrics 1.0 (src/forks/open-metrics-views.ts), with HELP's quotes and control characters escaped. */
export async function renderOpenMetrics(registry: Registry): Promise<string> {
  // prom-client writes label values as the format requires, but neither HELP's quotes nor control characters (exposition.ts).
  return withEscapedHelpQuotes(withoutControlCharacters(await renderOpenMetricsViews(registry)));
}
