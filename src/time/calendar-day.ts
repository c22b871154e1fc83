// A UTC calendar day as an operator writes it (YYYY-MM-DD), read for the reports' ranges (usage, shadow).

/** The shape of a day: four digits, two, two. */
export const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A calendar day that exists (2026-02-30 does not): its UTC midnight, or undefined. */
export function dayAt(text: string): number | undefined {
  const match = DAY.exec(text);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const at = Date.UTC(year, month - 1, day);
  const back = new Date(at);
  return back.getUTCFullYear() === year && back.getUTCMonth() === month - 1 && back.getUTCDate() === day ? at : undefined;
}
