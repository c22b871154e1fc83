// The one factor every test timeout and deadline goes through: TEST_TIME_SCALE (default 1), raised on a busy machine or slow CI.

/** TEST_TIME_SCALE as a number; anything but a positive number stops the run with the variable named. */
export function timeScale(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env.TEST_TIME_SCALE;
  if (raw === undefined || raw === '') return 1;
  const scale = Number(raw);
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`TEST_TIME_SCALE must be a positive number (such as 3), got ${JSON.stringify(raw)}`);
  return scale;
}

export const TIME_SCALE = timeScale();

/** `ms` of a deadline or timeout on a quiet machine, scaled by TEST_TIME_SCALE. */
export const scaled = (ms: number): number => Math.round(ms * TIME_SCALE);
