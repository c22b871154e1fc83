// The label values of the shadow metrics, every one listed: `satisfies` makes the compiler insist on the whole list.
import type { DifferenceKind, ShadowResult } from './shadow-outcome.ts';

export const SHADOW_RESULTS = Object.keys({
  match: true,
  differ: true,
  staging_error: true,
  staging_off_contract: true,
  skipped: true,
} satisfies Record<ShadowResult, true>) as readonly ShadowResult[];

export const DIFFERENCE_KINDS = Object.keys({
  missing: true,
  extra: true,
  type: true,
  value: true,
  order: true,
  status: true,
  header: true,
} satisfies Record<DifferenceKind, true>) as readonly DifferenceKind[];
