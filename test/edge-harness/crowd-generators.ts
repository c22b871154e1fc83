// Generates crowds of hostile clients held open beside a well-behaved one: never-reading (pipelined or not, small windows or not),
// slow heads at the cap, and posters of bodies refused unread that keep sending (the lingering close).
import fc from 'fast-check';

export interface CrowdSpec {
  /** The public listener's connection cap for the case (listen.maxConnections), small so that the crowd fills it. */
  maxConnections: number;
  /** listen.sendTimeoutMs for the case. */
  sendTimeoutMs: number;
  /** listen.maxInFlight for the case: below the crowd's size, so a crowd that held slots would shed the witness (a keyed crowd gets one each more). */
  maxInFlight: number;
  /**
   * Connections that ask for the document (or a keyed listPets) and never read: each writes `pipelined` requests at once (1: not
   * pipelined); `smallWindow`: with a 4 KB receive window and MSS 536, as a client across a real network advertises.
   */
  neverReading: { connections: number; pipelined: number; keyed: boolean; smallWindow: boolean };
  /** Connections that send part of a request head and nothing more. */
  slowHeads: { connections: number; bytes: number };
  /**
   * Connections that POST a body larger than the gateway accepts and keep sending it, at full speed or `trickle` (64 KB every 20 ms):
   * refused unread (413 with a key, 401 without), then read and dropped until the lingering close's bounds.
   */
  posters: { connections: number; keyed: boolean; trickle: boolean };
  /** Which crowd opens first (the cap then evicts the other's connections first). */
  slowHeadsFirst: boolean;
}

/** The largest crowd a generator makes: each count from 0 (at least 8 connections at the cap) up to these. */
export interface CrowdBounds {
  maxConnections: number;
  neverReading: number;
  pipelined: number;
  slowHeads: number;
  posters: number;
}

/** The crowds of the integration tier's property and of `npm run fuzz`: up to 118 hostile connections. */
export const CROWD_BOUNDS: CrowdBounds = { maxConnections: 48, neverReading: 48, pipelined: 16, slowHeads: 64, posters: 6 };

export function crowdSpecWithin(bounds: CrowdBounds): fc.Arbitrary<CrowdSpec> {
  return fc.record({
    maxConnections: fc.integer({ min: 8, max: bounds.maxConnections }),
    sendTimeoutMs: fc.integer({ min: 400, max: 1500 }),
    maxInFlight: fc.integer({ min: 2, max: 8 }),
    neverReading: fc.record({
      connections: fc.integer({ min: 0, max: bounds.neverReading }),
      pipelined: fc.integer({ min: 1, max: bounds.pipelined }),
      keyed: fc.boolean(),
      smallWindow: fc.boolean(),
    }),
    posters: fc.record({ connections: fc.integer({ min: 0, max: bounds.posters }), keyed: fc.boolean(), trickle: fc.boolean() }),
    slowHeads: fc.record({ connections: fc.integer({ min: 0, max: bounds.slowHeads }), bytes: fc.integer({ min: 0, max: 30 }) }),
    slowHeadsFirst: fc.boolean(),
  });
}

export const crowdSpec: fc.Arbitrary<CrowdSpec> = crowdSpecWithin(CROWD_BOUNDS);
