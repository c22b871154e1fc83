// The clock the stages time their facts by: monotonic milliseconds (fractional), which no system clock step moves.
export const monotonicMs = (): number => performance.now();
