// What one shadowed request came to: the seam between the comparison (src/shadow/compare*, shadow sender) and
// the report (src/shadow/report*, Redis store, admin route, CLI). Nothing from a body crosses it: pointers, kinds
// and counts only.

/** The result label of petstore_gateway_shadow_comparisons_total. */
export type ShadowResult = 'match' | 'differ' | 'staging_error' | 'staging_off_contract' | 'skipped';

/** The kind label of petstore_gateway_shadow_differences_total; `status` and `header` name the answer's head. */
export type DifferenceKind = 'missing' | 'extra' | 'type' | 'value' | 'order' | 'status' | 'header';

/**
 * One difference between staging's answer and production's. `pointer` is a JSON pointer into the body with every
 * array index generalised to `*` (`/items/* /status` without the space), `/status` for the status line, and
 * `/headers/<lower-case name>` for a declared header.
 */
export interface ShadowDifference {
  readonly pointer: string;
  readonly kind: DifferenceKind;
}

/** One comparison's outcome, as a replica records it. */
export interface ShadowOutcome {
  /** The operationId of the interface document. */
  readonly operation: string;
  readonly result: ShadowResult;
  /** When result is `differ`: the differences that are not noise. Empty otherwise. */
  readonly differences: readonly ShadowDifference[];
  /** Differences also found at pointers known as noise for this operation (learnt or listed by the operator). */
  readonly noise: readonly ShadowDifference[];
  /** Epoch milliseconds of the comparison, from the gateway's injected clock. */
  readonly at: number;
}

/** A difference between two production answers to the same request: noise for its operation, at that pointer by that kind. */
export interface NoiseSighting {
  readonly operation: string;
  readonly pointer: string;
  readonly kind: DifferenceKind;
  readonly at: number;
}

/** Where outcomes and noise sightings go: the report store (every replica adds to one report). Never throws. */
export interface ShadowOutcomeSink {
  record(outcome: ShadowOutcome): void;
  noteNoise(sighting: NoiseSighting): void;
}
