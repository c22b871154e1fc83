// A key is rotated once: the successor is written and recorded on the old key in one script, so of concurrent rotations one wins.
import type { RedisClient } from '../redis/connect.ts';
import { fromHashFields, orderMember, toHashFields, type KeyLayout } from './key-records.ts';
import type { KeyRecord } from './key-store.ts';

/** What became of a rotation: done (the epoch it moved, both records as written), or refused as the old key stood. */
export type RotationOutcome =
  | { outcome: 'rotated'; epoch: number; successor: KeyRecord; previous: KeyRecord }
  | { outcome: 'already_rotated'; successor: string }
  | { outcome: 'revoked' }
  | { outcome: 'gone' };

/** The fields a successor copies from the old record, in the order the script reads them. */
const GRANTS = ['environments', 'expiresAt', 'rateLimitPerMinute', 'optedIn', 'quotaPerDay', 'quotaPerMonth'] as const;

// KEYS: the old record, the new record, the new id's key hash, the id set, the ordered index, the events epoch.
// ARGV: the new id, the new key hash, its index member, the overlap's end ('' revokes at once), the new record's pairs.
// One script, as WATCH would need a connection of its own: the grants copied are the old record's as they stand.
// Every key carries {keys}: one slot. Expiries compare as text: all written by toISOString (UTC, fixed width).
const ROTATE_SCRIPT = `
local state = redis.call('HMGET', KEYS[1], 'id', 'revoked', 'rotatedTo', 'environments', 'expiresAt', 'rateLimitPerMinute', 'optedIn', 'quotaPerDay', 'quotaPerMonth')
if not state[1] then return {'gone'} end
if state[3] then return {'already_rotated', state[3]} end
if state[2] == '1' then return {'revoked'} end
local names = {'environments', 'expiresAt', 'rateLimitPerMinute', 'optedIn', 'quotaPerDay', 'quotaPerMonth'}
local new = {}
for i = 5, #ARGV do new[#new + 1] = ARGV[i] end
local grants = {}
for i, name in ipairs(names) do
  grants[i] = state[3 + i] or ''
  if grants[i] ~= '' then
    new[#new + 1] = name
    new[#new + 1] = grants[i]
  end
end
local old = {'rotatedTo', ARGV[1]}
local ends = ARGV[4]
if ends == '' then
  old[3], old[4] = 'revoked', '1'
else
  if grants[2] ~= '' and grants[2] < ends then ends = grants[2] end
  old[3], old[4] = 'expiresAt', ends
end
redis.call('HSET', KEYS[2], unpack(new))
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[3])
redis.call('HSET', KEYS[1], unpack(old))
return {'rotated', redis.call('INCR', KEYS[6]), grants, ends}
`;

export interface Rotation {
  /** The old key as the caller read it: its id, consumer and creation, which no change touches. */
  old: { keyHash: string; record: KeyRecord };
  /** The successor's own fields (id, consumer, creation); its grants are the old record's, copied by the script. */
  successor: { keyHash: string; record: KeyRecord };
  /** When the old key stops working (toISOString), never after its own expiry; absent, it is revoked at once. */
  overlapEndsAt?: string;
}

/** Writes the successor and marks the old key rotated to it, unless it is already rotated, revoked or gone. */
export async function rotateOnce(redis: RedisClient, layout: KeyLayout, rotation: Rotation): Promise<RotationOutcome> {
  const { old, successor } = rotation;
  const keys = [layout.record(old.keyHash), layout.record(successor.keyHash), layout.byId(successor.record.id), layout.ids, layout.order, layout.eventsEpoch];
  const own = Object.entries(toHashFields(successor.record)).filter(([field]) => !(GRANTS as readonly string[]).includes(field));
  const args = [successor.record.id, successor.keyHash, orderMember(successor.record), rotation.overlapEndsAt ?? '', ...own.flat()];
  const [outcome, value, copied, ends] = (await redis.eval(ROTATE_SCRIPT, keys.length, ...keys, ...args)) as [string, string | number, string[], string];
  if (outcome === 'already_rotated') return { outcome, successor: String(value) };
  if (outcome === 'revoked' || outcome === 'gone') return { outcome };
  if (outcome !== 'rotated') throw new Error(`the rotation script answered ${String(outcome)}`);
  // Both records as the script wrote them, not read again: nothing may fail once it has committed. Absent
  // grants are '' (read as absent), and the required fields come from whole records, so both read back whole.
  const grants = Object.fromEntries(GRANTS.map((field, index) => [field, copied[index] ?? '']));
  const change = rotation.overlapEndsAt === undefined ? { revoked: '1' } : { expiresAt: ends };
  return {
    outcome,
    epoch: Number(value),
    successor: fromHashFields({ ...toHashFields(successor.record), ...grants })!,
    previous: fromHashFields({ ...toHashFields(old.record), ...grants, ...change, rotatedTo: successor.record.id })!,
  };
}
