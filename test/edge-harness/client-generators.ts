// Generates client scripts: requests written pipelined, one answer at a time, or trickled in pieces; garbage, CONNECT; early closes;
// over TLS, clients that leave with close_notify, a reset or half a record, and hostile TLS clients.
import fc from 'fast-check';
import { buildRequest, GARBAGE, LEAVING_KINDS, requestSpec, type RequestSpec, type Segment } from './client-requests.ts';
import { KEY_PLACEHOLDER, LEAVE_HOWS, tagOf, type ClientScript, type LeaveHow, type Piece, type SentRequest, type TlsHostility } from './script.ts';

export interface ClientSpec {
  requests: RequestSpec[];
  /** An index into GARBAGE, written after the complete requests. */
  garbage: number | undefined;
  /** whole: everything in as few writes as possible (pipelined); sequential: each request after the previous answer; pieces: cut at random places. */
  mode: 'whole' | 'sequential' | 'pieces';
  /** Where `pieces` cuts, as fractions of the script. */
  cuts: number[];
  /** Delays before the writes, in turn. */
  delays: number[];
  earlyClose: { at: number; delayMs: number } | undefined;
  /** TLS only: how the client leaves, early or in the middle of a request (absent: destroy). */
  leave?: LeaveHow;
  /** TLS only: a hostile TLS client, `renegotiate.at` a fraction of its pieces (absent: a well-behaved one). */
  tls?: TlsHostilitySpec;
}

export type TlsHostilitySpec = Exclude<TlsHostility, { kind: 'renegotiate' }> | { kind: 'renegotiate'; at: number };

/** `arbitrary` in `percent` % of the cases, undefined otherwise (shrinks towards undefined). */
function sometimes<T>(percent: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary });
}

const earlyClose = fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), delayMs: fc.integer({ min: 0, max: 20 }) });

/** The plain-HTTP client (the TCP runs' generator, unchanged so that a seed gives the cases it always gave). */
export const clientSpec: fc.Arbitrary<ClientSpec> = fc.record({
  requests: fc.array(requestSpec, { minLength: 1, maxLength: 4 }),
  garbage: sometimes(20, fc.integer({ min: 0, max: GARBAGE.length - 1 })),
  mode: fc.constantFrom('whole' as const, 'sequential' as const, 'pieces' as const),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
  delays: fc.array(fc.integer({ min: 0, max: 15 }), { maxLength: 4 }),
  earlyClose: sometimes(15, earlyClose),
});

const tlsHostility: fc.Arbitrary<TlsHostilitySpec> = fc.oneof(
  fc.record({
    kind: fc.constant('handshake-cut' as const),
    // A byte at least, the whole record at most.
    at: fc.double({ min: 0.01, max: 1, noNaN: true }),
    awaitServer: fc.boolean(),
    leave: fc.constantFrom('end' as const, 'reset' as const),
  }),
  fc.record({ kind: fc.constant('plaintext' as const) }),
  fc.record({ kind: fc.constant('renegotiate' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
);

/**
 * The TLS client: the plain one, leaving early twice as often and in any of the ways a TLS client can (destroy, close_notify, reset,
 * half a record), and one client in four hostile to TLS itself.
 */
export const tlsClientSpec: fc.Arbitrary<ClientSpec> = fc
  .record({
    requests: fc.array(requestSpec, { minLength: 1, maxLength: 4 }),
    garbage: sometimes(20, fc.integer({ min: 0, max: GARBAGE.length - 1 })),
    mode: fc.constantFrom('whole' as const, 'sequential' as const, 'pieces' as const),
    cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
    delays: fc.array(fc.integer({ min: 0, max: 15 }), { maxLength: 4 }),
    earlyClose: sometimes(30, earlyClose),
    leave: fc.constantFrom(...LEAVE_HOWS),
    tls: sometimes(25, tlsHostility),
  })
  .map(({ tls, ...spec }) => (tls === undefined ? spec : { ...spec, tls }));

/** The TLS hostility as the script carries it: a renegotiation's point as a piece index. */
function toHostility(spec: TlsHostilitySpec, pieces: number): TlsHostility {
  return spec.kind === 'renegotiate' ? { kind: 'renegotiate', afterPieces: Math.min(pieces, Math.floor(spec.at * (pieces + 1))) } : spec;
}

interface PlacedSegment extends Segment {
  afterFinals?: number;
}

/** Moves a cut out of the key placeholder: the runner substitutes the key per write. */
function safeCut(script: string, at: number): number {
  for (let found = script.indexOf(KEY_PLACEHOLDER); found !== -1; found = script.indexOf(KEY_PLACEHOLDER, found + 1)) {
    if (at > found && at < found + KEY_PLACEHOLDER.length) return found;
  }
  return at;
}

/** Client `index` (using key `index`) as a byte script. */
export function toClientScript(spec: ClientSpec, index: number): ClientScript {
  const segments: PlacedSegment[] = [];
  const requests: SentRequest[] = [];
  let offset = 0;
  let continues = 0;
  // A request the client leaves before its end is its last: nothing after it is written.
  const leaving = spec.requests.findIndex((requestSpec) => LEAVING_KINDS.has(requestSpec.kind));
  const written = leaving === -1 ? spec.requests : spec.requests.slice(0, leaving + 1);
  written.forEach((requestSpec, r) => {
    const built = buildRequest(requestSpec, tagOf(index, r), r === written.length - 1);
    built.segments.forEach((segment, s) => {
      segments.push({ ...segment, ...(s === 0 && spec.mode === 'sequential' && r > 0 ? { afterFinals: r } : {}) });
      offset += segment.text.length;
    });
    // A request the client leaves is never sent whole: not one the gateway owes an answer, nor the upstream may receive.
    if (built.leaves) return;
    requests.push({
      tag: tagOf(index, r),
      method: built.method,
      target: built.target,
      body: built.body,
      valid: built.valid,
      end: offset,
      ...(built.trace ? { trace: built.trace } : {}),
      ...(built.allowOrigin ? { allowOrigin: built.allowOrigin } : {}),
      ...(built.hop ? { hop: built.hop } : {}),
      ...(built.segments.some((segment) => segment.afterContinues) ? { waitsForContinue: true as const } : {}),
      ...(/\r\nExpect: 100-continue\r\n/i.test(built.segments[0]!.text) ? { expectsContinue: true as const } : {}),
    });
  });
  // After a request asking for Connection: close, nothing more is read: no garbage then.
  const closes = written.at(-1)!.close || leaving !== -1;
  const garbage = spec.garbage !== undefined && !closes;
  if (garbage) segments.push({ text: GARBAGE[spec.garbage!]!, ...(spec.mode === 'sequential' ? { afterFinals: written.length } : {}) });

  // Segments that wait start a new write; the others join the write before them.
  const writes: Array<{ start: number; piece: Omit<Piece, 'delayMs'> }> = [];
  let at = 0;
  for (const segment of segments) {
    const waits = segment.afterContinues || segment.afterFinals !== undefined;
    const previous = writes.at(-1);
    if (previous && !waits) previous.piece.bytes += segment.text;
    else {
      continues += segment.afterContinues ? 1 : 0;
      writes.push({
        start: at,
        piece: {
          bytes: segment.text,
          ...(segment.afterContinues ? { afterContinues: continues } : {}),
          ...(segment.afterFinals !== undefined ? { afterFinals: segment.afterFinals } : {}),
        },
      });
    }
    at += segment.text.length;
  }
  const script = segments.map((segment) => segment.text).join('');
  let pieces: Array<Omit<Piece, 'delayMs'>> = writes.map((write) => write.piece);
  if (spec.mode === 'pieces') {
    const cuts = new Set(spec.cuts.map((fraction) => safeCut(script, Math.floor(fraction * script.length))));
    pieces = writes.flatMap(({ start, piece }) => {
      const inside = [...cuts].filter((cut) => cut > start && cut < start + piece.bytes.length).sort((a, b) => a - b);
      const bounds = [start, ...inside, start + piece.bytes.length];
      return bounds.slice(1).map((end, k) => ({
        bytes: script.slice(bounds[k]!, end),
        // Only the first part of a write waits.
        ...(k === 0
          ? {
              ...(piece.afterContinues ? { afterContinues: piece.afterContinues } : {}),
              ...(piece.afterFinals !== undefined ? { afterFinals: piece.afterFinals } : {}),
            }
          : {}),
      }));
    });
  }
  const timed: Piece[] = pieces.map((piece, k) => ({ delayMs: spec.delays.length === 0 ? 0 : spec.delays[k % spec.delays.length]!, ...piece }));
  // A cut handshake never gets to HTTP: no pieces, no requests. A plaintext client runs over TCP, where there are no records to halve.
  if (spec.tls?.kind === 'handshake-cut') return { key: index, pieces: [], requests: [], garbage: false, tls: spec.tls };
  const how = spec.tls?.kind === 'plaintext' && spec.leave === 'half-record' ? 'reset' : spec.leave;
  const withHow = how === undefined || how === 'destroy' ? {} : { how };
  return {
    key: index,
    pieces: timed,
    requests,
    garbage,
    ...(spec.earlyClose
      ? { earlyClose: { pieces: Math.min(timed.length, 1 + Math.floor(spec.earlyClose.at * timed.length)), delayMs: spec.earlyClose.delayMs, ...withHow } }
      : leaving !== -1
        ? { earlyClose: { pieces: timed.length, delayMs: 0, ...withHow } }
        : {}),
    ...(spec.tls === undefined ? {} : { tls: toHostility(spec.tls, timed.length) }),
  };
}
