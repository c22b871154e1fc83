// Time as a dependency, so that policies bound to dates (the sunset) can be tested at any instant.

export interface Clock {
  /** The current instant in milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until moved: for tests and the demo's "what if" runs. */
export function fixedClock(initial: number | Date): Clock & { set(at: number | Date): void } {
  let current = typeof initial === 'number' ? initial : initial.getTime();
  return {
    now: () => current,
    set(at) {
      current = typeof at === 'number' ? at : at.getTime();
    },
  };
}
