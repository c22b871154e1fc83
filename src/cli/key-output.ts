// What `npm run keys` prints: a key described for a terminal (every value from Redis escaped), or JSON.
import type { IssuedKey } from '../auth/key-admin.ts';
import type { KeyRecord } from '../auth/key-store.ts';
import { systemClock } from '../time/clock.ts';
import { printable, printableJson } from './printable.ts';

export function describe(record: KeyRecord): string {
  const state = record.revoked ? 'revoked' : record.expiresAt && Date.parse(record.expiresAt) <= systemClock.now() ? 'expired' : 'active';
  return [
    `${printable(record.id)}  ${state}`,
    `  consumer:      ${printable(record.consumer)}`,
    `  environments:  ${record.environments.join(', ')}`,
    `  created:       ${printable(record.createdAt)}`,
    `  expires:       ${record.expiresAt === undefined ? 'never' : printable(record.expiresAt)}`,
    `  rate limit:    ${record.rateLimitPerMinute === undefined ? 'environment default' : `${record.rateLimitPerMinute}/min`}`,
    ...(record.quotaPerDay === undefined ? [] : [`  daily quota:   ${record.quotaPerDay} per UTC day`]),
    ...(record.quotaPerMonth === undefined ? [] : [`  monthly quota: ${record.quotaPerMonth} per UTC month`]),
    ...(record.optedIn === undefined ? [] : [`  opted in to:   ${record.optedIn.join(', ')}`]),
    ...(record.rotatedTo === undefined ? [] : [`  rotated to:    ${printable(record.rotatedTo)}`]),
  ].join('\n');
}

/** JSON output escapes what a terminal would act on too (src/cli/printable.ts). */
export function printIssued(issued: IssuedKey, json: boolean): void {
  if (json) {
    process.stdout.write(`${printableJson({ ...issued.record, key: issued.key })}\n`);
    return;
  }
  process.stdout.write(`${describe(issued.record)}\n\nAPI key (shown this once; it cannot be recovered):\n  ${issued.key}\n`);
}

export function printRecord(record: KeyRecord, json: boolean): void {
  process.stdout.write(json ? `${printableJson(record)}\n` : `${describe(record)}\n`);
}

/** Prints every key as its page arrives; with `json` one array, left unclosed by a failure so no parser takes a part for the whole. */
export async function printKeyList(pages: AsyncIterable<readonly KeyRecord[]>, json: boolean): Promise<void> {
  let printed = 0;
  if (json) process.stdout.write('[');
  for await (const page of pages) {
    if (page.length === 0) continue;
    const text = json ? page.map((record) => printableJson(record)).join(',') : page.map(describe).join('\n\n');
    process.stdout.write(`${printed === 0 ? '' : json ? ',' : '\n\n'}${text}`);
    printed += page.length;
  }
  if (json) process.stdout.write(']\n');
  else process.stdout.write(printed === 0 ? 'no keys\n' : '\n');
}
