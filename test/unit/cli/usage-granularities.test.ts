// The keys CLI's usage command loads its report module only when it runs: the granularities its option offers are written out, and held here to the report's.
import { expect, it } from 'vitest';
import { GRANULARITIES } from '../../../src/cli/usage-command.ts';
import { USAGE_GRANULARITIES } from '../../../src/observability/usage-report.ts';

it('offers the granularities the usage report has', () => {
  expect(GRANULARITIES).toEqual(USAGE_GRANULARITIES);
});
