// Generates crowds of hostile clients held open beside a well-behaved one: never-reading (pipelined or not) and slow heads at the cap.
import fc from 'fast-check';

export interface CrowdSpec {
  /** The public listener's connection cap for the case (listen.maxConnections), small so that the crowd fills it. */
  maxConnections: number;
  /** listen.sendTimeoutMs for the case. */
  sendTimeoutMs: number;
  /** listen.maxInFlight for the case: below the crowd's size, so a crowd that held slots would shed the witness (a keyed crowd gets one each more). */
  maxInFlight: number;
  /** Connections that ask for the document and never read: each writes `pipelined` requests at once (1: not pipelined). */
  neverReading: { connections: number; pipelined: number; keyed: boolean };
  /** Connections that send part of a request head and nothing more. */
  slowHeads: { connections: number; bytes: number };
  /** Which crowd opens first (the cap then evicts the other's connections first). */
  slowHeadsFirst: boolean;
}

export const crowdSpec: fc.Arbitrary<CrowdSpec> = fc.record({
  maxConnections: fc.integer({ min: 8, max: 48 }),
  sendTimeoutMs: fc.integer({ min: 400, max: 1500 }),
  maxInFlight: fc.integer({ min: 2, max: 8 }),
  neverReading: fc.record({ connections: fc.integer({ min: 0, max: 48 }), pipelined: fc.integer({ min: 1, max: 16 }), keyed: fc.boolean() }),
  slowHeads: fc.record({ connections: fc.integer({ min: 0, max: 64 }), bytes: fc.integer({ min: 0, max: 30 }) }),
  slowHeadsFirst: fc.boolean(),
});
