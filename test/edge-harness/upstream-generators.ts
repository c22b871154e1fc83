// Generates how the hostile upstream answers each request: mostly as a backend should, sometimes as a buggy one does.
//
// What is generated is a buggy backend, never an adversarially timed one. Bytes written LATE, after a
// complete answer, are generated only after answers that by protocol have no body (HEAD, 204, 304),
// where a backend that writes a body anyway is a known kind of bug the gateway can guard against (by not
// reusing that connection). After any other complete, correctly framed answer, a stray response written
// later (`strayAfter`), once the gateway may already have sent the next request on that connection, would
// be indistinguishable from the answer to that request but for X-Request-Id: the upstream echoes it (but
// where `answerId` says otherwise), the gateway requires it (`upstream.requestIdEcho: required`), and the
// stray carries none, so a gateway that relays it breaks invariant a. The stray may also be a bare CRLF
// (which the gateway's parser skips: the next answer is still its request's, and the connection must
// not carry another) or a few bytes that are not HTTP (the next request there gets a gateway Error, never
// another's answer), written 0-15 ms after the answer or later (`strayKind`, `lateMs`). Extra bytes in the SAME write as a complete answer (and a Content-Length that lies short)
// are generated for every answer: they arrive before the gateway can have sent anything else on that
// connection, so a gateway that reads them as the next answer is at fault. So is a bare CRLF in that same write (`crlfSameWrite`),
// after a chunked body's last chunk and trailers too, which the gateway's parser skips: that connection must carry no other request.
//
// A transfer coding other than `chunked` alone (RFC 9112 §6.1) is generated on any answer: undici hands
// over what lies under a final `chunked` undecoded, and reads any other final coding to the close, so
// whatever the gateway relayed would be framing it cannot vouch for; every such answer must become a 502.
//
// An answer may break the interface document in one named way (OFF_CONTRACT_KINDS), on top of anything above, so that wrong
// shapes also come slow, stalled, cut or lying about their length. Whether the answer is on the document is decided here,
// from the kind chosen and what else the answer does, never by asking the gateway's checker (see contractOf).
import fc from 'fast-check';
import { offContractApplies } from './contract-bodies.ts';
import { type ContractVerdict, OFF_CONTRACT_KINDS, type OffContractKind, type UpstreamBehaviour } from './script.ts';

/** A delay before or within an answer: none, short, or a stall longer than the gateway's idle timeout. */
type Delay = { kind: 'none' } | { kind: 'short'; ms: number } | { kind: 'stall' };

export interface BehaviourSpec
  extends Omit<UpstreamBehaviour, 'status' | 'headDelayMs' | 'bodyDelayMs' | 'transferCoding' | 'offContract' | 'contract' | 'trickleMs'> {
  /** A slow body (UpstreamBehaviour.trickleMs), waiting at most half the idle timeout. */
  trickle: boolean;
  /** Kept only where it applies to the status the answer ends up with (offContractApplies). */
  offContract: OffContractKind | undefined;
  /** Mostly none: the answer is framed by its length or by `chunked` alone. */
  transferCoding: readonly string[] | undefined;
  /** `success` is the operation's own (201 for createPet, else 200). */
  status: 'success' | 204 | 304 | 400 | 404 | 409 | 422 | 429 | 503;
  headDelay: Delay;
  bodyDelay: Delay;
}

const delay = (stallWeight: number): fc.Arbitrary<Delay> =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constant<Delay>({ kind: 'none' }) },
    { weight: 5, arbitrary: fc.integer({ min: 1, max: 20 }).map((ms): Delay => ({ kind: 'short', ms })) },
    { weight: stallWeight, arbitrary: fc.constant<Delay>({ kind: 'stall' }) },
  );

/** Transfer-Encoding lines a buggy or exotic backend writes; each is one header line. */
const UNRELAYABLE_CODINGS: ReadonlyArray<readonly string[]> = [
  ['gzip, chunked'],
  ['chunked, gzip'],
  ['gzip'],
  ['identity'],
  ['chunked, chunked'],
  ['x-pet-store'],
  ['gzip', 'chunked'],
  ['chunked', 'chunked'],
];

const rare = (weight: number) => fc.oneof({ weight: 100 - weight, arbitrary: fc.constant(false) }, { weight, arbitrary: fc.constant(true) });

export const behaviourSpec: fc.Arbitrary<BehaviourSpec> = fc.record({
  status: fc.oneof(
    { weight: 14, arbitrary: fc.constant('success' as const) },
    { weight: 4, arbitrary: fc.constantFrom(204 as const, 304 as const) },
    { weight: 3, arbitrary: fc.constantFrom(400 as const, 404 as const, 409 as const, 422 as const, 429 as const, 503 as const) },
  ),
  // Two answers in five: the old behaviours keep most of the runs.
  offContract: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.constantFrom(...OFF_CONTRACT_KINDS) }),
  plainErrorBody: rare(25),
  framing: fc.oneof({ weight: 3, arbitrary: fc.constant('length' as const) }, { weight: 1, arbitrary: fc.constant('chunked' as const) }),
  lie: fc.oneof({ weight: 14, arbitrary: fc.constant('none' as const) }, { weight: 1, arbitrary: fc.constantFrom('shorter' as const, 'longer' as const) }),
  interim: fc.oneof({ weight: 6, arbitrary: fc.constant<number[]>([]) }, { weight: 1, arbitrary: fc.constantFrom<number[]>([100], [103], [100, 103]) }),
  upgrade: rare(3),
  headDelay: delay(1),
  bodyDelay: delay(1),
  closeMidBody: rare(4),
  connectionClose: rare(15),
  extraSameWrite: rare(6),
  crlfSameWrite: rare(10),
  trailers: rare(30),
  hopField: fc.oneof({ weight: 4, arbitrary: fc.constant('none' as const) }, { weight: 1, arbitrary: fc.constantFrom('listed' as const, 'unlisted' as const) }),
  trickle: rare(12),
  late: rare(40),
  // Mostly echoed, as backends are asked to; sometimes missing or another request's, which the gateway must refuse.
  answerId: fc.oneof(
    { weight: 20, arbitrary: fc.constant('echo' as const) },
    { weight: 1, arbitrary: fc.constant('missing' as const) },
    { weight: 1, arbitrary: fc.constant('wrong' as const) },
  ),
  strayAfter: rare(8),
  strayKind: fc.constantFrom('response' as const, 'crlf' as const, 'garbage' as const),
  // From at once (in the gateway's same read as the answer, or not) to well after the next request could have been sent.
  lateMs: fc.oneof(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 20, max: 120 })),
  transferCoding: fc.oneof(
    { weight: 24, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom<readonly string[] | undefined>(...UNRELAYABLE_CODINGS) },
  ),
});

/**
 * Whether the answer, as written, keeps the document's promise. A status its operation does not declare breaks it at the head,
 * whatever follows (the variant document of documents.ts; the project's declares `default` everywhere, so every status there is
 * declared, and a success status with a body of the wrong shape is a body's fault). What the gateway checks decides what counts: a HEAD's answer and
 * a 204's or 304's are checked for status and headers only, so a body kind is on the document there. A Content-Length that lies
 * short hands the gateway a cut body: JSON no longer (the cut falls in the padding or the Error's last member).
 */
function contractOf(behaviour: Omit<UpstreamBehaviour, 'contract'>, method: string, declared: ReadonlySet<number> | undefined): ContractVerdict {
  const { offContract: kind, status } = behaviour;
  if (kind === 'no-retry-after' || (declared !== undefined && !declared.has(status))) return 'off-head';
  const bodyChecked = method !== 'HEAD' && status !== 204 && status !== 304;
  if (!bodyChecked) return 'on';
  if (kind === 'html' || (kind === undefined && status >= 400 && behaviour.plainErrorBody)) return 'off-head';
  // `shorter` lies only in a Content-Length (a chunked body is framed truly whatever `lie` says, but `longer`).
  if (kind !== undefined || (behaviour.lie === 'shorter' && behaviour.framing === 'length')) return 'off-body';
  return 'on';
}

/**
 * The behaviour for a request of `method`, with the case's idle timeout to stall past. `declared`: the statuses the request's
 * operation declares, when it declares no `default` (documents.ts); absent, every status is declared.
 */
export function toBehaviour(spec: BehaviourSpec, method: string, idleTimeoutMs: number, declared?: ReadonlySet<number>): UpstreamBehaviour {
  const ms = (value: Delay) => (value.kind === 'none' ? 0 : value.kind === 'short' ? value.ms : idleTimeoutMs + 300);
  const { headDelay, bodyDelay, status: generated, transferCoding, offContract, trickle, ...rest } = spec;
  const status = generated === 'success' ? (method === 'POST' ? 201 : 200) : generated;
  const behaviour: Omit<UpstreamBehaviour, 'contract'> = {
    ...rest,
    status,
    headDelayMs: ms(headDelay),
    bodyDelayMs: ms(bodyDelay),
    ...(transferCoding === undefined ? {} : { transferCoding: [...transferCoding] }),
    ...(offContract !== undefined && offContractApplies(offContract, status) ? { offContract } : {}),
    // Success bodies only: an error answer is read whole before it is answered, in every mode, so its rest would only wait the cap.
    ...(trickle && status < 400 && status !== 204 && status !== 304 ? { trickleMs: Math.floor(idleTimeoutMs / 2) } : {}),
  };
  return { ...behaviour, contract: contractOf(behaviour, method, declared) };
}
