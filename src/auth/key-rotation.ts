// A key is rotated once: the successor is written and recorded on the old key in one script, so of concurrent rotations one wins.
import type { RedisClient } from '../redis/connect.ts';
import { orderMember, toHashFields, type KeyLayout } from './key-records.ts';
import type { KeyRecord } from './key-store.ts';

/** What became of a rotation: done (with the epoch the old key's change moved), or refused as the old key stood. */
export type RotationOutcome =
  | { outcome: 'rotated'; epoch: number }
  | { outcome: 'already_rotated'; successor: string }
  | { outcome: 'revoked' }
  | { outcome: 'gone' };

// KEYS: the old record, the new record, the new id's key hash, the id set, the ordered index, the events epoch.
// ARGV: the new id, the new key hash, its index member, n; then n field/value pairs changing the old record,
// then the new record's pairs. Checked and written in one script: nothing runs between the check and the write
// (WATCH would need a connection of its own; the gateway's is shared). Every key carries {keys}: one slot.
const ROTATE_SCRIPT = `
local state = redis.call('HMGET', KEYS[1], 'id', 'revoked', 'rotatedTo')
if not state[1] then return {'gone'} end
if state[3] then return {'already_rotated', state[3]} end
if state[2] == '1' then return {'revoked'} end
local changes = tonumber(ARGV[4])
local old = {'rotatedTo', ARGV[1]}
for i = 5, 4 + changes * 2 do old[#old + 1] = ARGV[i] end
local new = {}
for i = 5 + changes * 2, #ARGV do new[#new + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(new))
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[3])
redis.call('HSET', KEYS[1], unpack(old))
return {'rotated', redis.call('INCR', KEYS[6])}
`;

export interface Rotation {
  oldKeyHash: string;
  successor: { keyHash: string; record: KeyRecord };
  /** What the old record becomes besides `rotatedTo`: revoked, or an expiry after the overlap. */
  oldChanges: Readonly<Record<string, string>>;
}

/** Writes the successor and marks the old key rotated to it, unless it is already rotated, revoked or gone. */
export async function rotateOnce(redis: RedisClient, layout: KeyLayout, rotation: Rotation): Promise<RotationOutcome> {
  const { successor, oldChanges } = rotation;
  const keys = [
    layout.record(rotation.oldKeyHash),
    layout.record(successor.keyHash),
    layout.byId(successor.record.id),
    layout.ids,
    layout.order,
    layout.eventsEpoch,
  ];
  const changes = Object.entries(oldChanges);
  const args = [
    successor.record.id,
    successor.keyHash,
    orderMember(successor.record),
    String(changes.length),
    ...changes.flat(),
    ...Object.entries(toHashFields(successor.record)).flat(),
  ];
  const [outcome, value] = (await redis.eval(ROTATE_SCRIPT, keys.length, ...keys, ...args)) as [string, string | number | undefined];
  if (outcome === 'rotated') return { outcome, epoch: Number(value) };
  if (outcome === 'already_rotated') return { outcome, successor: String(value) };
  if (outcome === 'revoked' || outcome === 'gone') return { outcome };
  throw new Error(`the rotation script answered ${String(outcome)}`);
}
