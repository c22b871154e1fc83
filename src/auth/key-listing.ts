// Keys a page at a time, oldest first, from the ordered index: a page is whole or the listing fails, never shorter.
import type { RedisClient } from '../redis/connect.ts';
import { fromHashFields, idOfOrderMember, orderMember, type KeyLayout } from './key-records.ts';
import { KeyAdminError } from './key-admin-error.ts';
import type { KeyRecord } from './key-store.ts';

/** Keys a page holds when the caller names no limit, and at most (config/admin.openapi.yaml, `listKeys`). */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

/** Ids whose creation instant is read at once while the index is filled from the id set. */
const FILL_BATCH = 1000;

export interface PageRequest {
  /** Where the page starts: the `next` of the page before; none for the first. */
  cursor?: string;
  limit?: number;
}

export interface KeyPage {
  records: KeyRecord[];
  /** The cursor of the page after this one; absent on the last. */
  next?: string;
}

/** Opaque to callers: the base64url of the last member a page gave, `createdAt|id`. */
export const encodeCursor = (member: string): string => Buffer.from(member, 'utf8').toString('base64url');

const ORDER_MEMBER = /^\d{4}-\d{2}-\d{2}T[\d:.]+Z\|[^|]+$/;

function decodeCursor(cursor: string): string {
  const member = Buffer.from(cursor, 'base64url').toString('utf8');
  // Only a cursor this code wrote reads back to the same text: a tampered one is refused, not resumed from anywhere.
  if (!ORDER_MEMBER.test(member) || encodeCursor(member) !== cursor) throw new KeyAdminError('invalid', 'cursor is not one this API gave');
  return member;
}

/** The replies of one pipeline, in order; a command that failed fails the whole (no reply is ever dropped). */
async function pipelined(redis: RedisClient, commands: Array<[string, ...string[]]>): Promise<unknown[]> {
  if (commands.length === 0) return [];
  const replies = await redis.pipeline(commands).exec();
  if (replies === null) throw new Error('the key lookups were not run (pipeline discarded)');
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}

/** Each id's record, in one round trip for the hashes and one for the records; a missing or damaged one is refused by id. */
async function readRecords(redis: RedisClient, layout: KeyLayout, ids: readonly string[]): Promise<KeyRecord[]> {
  const hashes = (await pipelined(
    redis,
    ids.map((id) => ['get', layout.byId(id)]),
  )) as Array<string | null>;
  const fields = (await pipelined(
    redis,
    hashes.map((keyHash, index) => {
      if (keyHash === null) throw new KeyAdminError('damaged', `key ${ids[index]} is listed but has no record`);
      return ['hgetall', layout.record(keyHash)];
    }),
  )) as Array<Record<string, string>>;
  return fields.map((each, index) => {
    const record = fromHashFields(each);
    if (!record) throw new KeyAdminError('damaged', `the record of key ${ids[index]} is damaged`);
    return record;
  });
}

/**
 * Older versions (a CLI still running) write only the id set: its ids beyond the index are added before a first page.
 * Ids are never removed from either, so equal counts (the cheap check) mean equal contents.
 */
async function fillOrder(redis: RedisClient, layout: KeyLayout): Promise<void> {
  const [setCount, orderCount] = (await pipelined(redis, [
    ['scard', layout.ids],
    ['zcard', layout.order],
  ])) as [number, number];
  if (setCount <= orderCount) return;
  let cursor = '0';
  do {
    const [next, ids] = await redis.sscan(layout.ids, cursor, 'COUNT', FILL_BATCH);
    cursor = next;
    const records = await readRecords(redis, layout, ids);
    // ZADD of a member already there changes nothing: a fill racing another, or a write, is harmless.
    if (records.length > 0) await redis.zadd(layout.order, ...records.flatMap((record) => [0, orderMember(record)]));
  } while (cursor !== '0');
}

/** One page, resumed after the cursor's member (not an offset): a key present throughout is listed exactly once, in order. */
export async function readKeyPage(redis: RedisClient, layout: KeyLayout, request: PageRequest): Promise<KeyPage> {
  const limit = request.limit ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE)
    throw new KeyAdminError('invalid', `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
  if (after === undefined) await fillOrder(redis, layout);
  // One more than the page: whether a next page exists is known without asking for an empty one.
  const members = await redis.zrangebylex(layout.order, after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, limit + 1);
  const page = members.slice(0, limit);
  const records = await readRecords(redis, layout, page.map(idOfOrderMember));
  return members.length > limit ? { records, next: encodeCursor(page.at(-1)!) } : { records };
}
