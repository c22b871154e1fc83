// The byte script of one harness case: what each client writes and how the upstream answers each request. Saved as a fixture.
import type { HarnessDocument } from './documents.ts';

/**
 * Written in place of the client's API key in a piece's bytes; the runner puts the key of the client's
 * `key` index there. Pieces are never cut inside it, so byte offsets are counted in script characters.
 */
export const KEY_PLACEHOLDER = '{{KEY}}';

/** Every tag a client sends: `edge-c<client>-r<request>`, a well-formed X-Request-Id the gateway forwards. */
export const TAG_PATTERN = /edge-c\d+-r\d+/g;

export function tagOf(client: number, request: number): string {
  return `edge-c${client}-r${request}`;
}

/** One write of a client: latin1 text (one char per byte), written whole. */
export interface Piece {
  /** Waited before the write (slow clients). */
  delayMs: number;
  bytes: string;
  /** Written only once this many final responses arrived (a client that waits for its answer before the next request). */
  afterFinals?: number;
  /** Written only once this many `100 Continue` arrived (Expect: 100-continue, waiting for the invitation). */
  afterContinues?: number;
}

/** A request a client writes whole; `end` says where its last byte is, so the runner knows whether it was sent. */
export interface SentRequest {
  tag: string;
  method: 'GET' | 'HEAD' | 'POST' | 'OPTIONS';
  /** Origin-form target as the upstream should receive it under its base path, e.g. `/v1/pets?limit=2`. */
  target: string;
  /** The body the upstream should receive (latin1); empty for none. */
  body: string;
  /** Valid per the interface: forwarded. Invalid ones are refused by the gateway and must never reach the upstream. */
  valid: boolean;
  /** Offset just past the request's last byte in the client's script (the concatenation of its pieces). */
  end: number;
  /** The trace the upstream's `traceparent` must continue (the client sent a valid one); absent: a new trace. */
  trace?: { traceId: string; sampled: boolean };
  /** The Access-Control-Allow-Origin every complete answer must carry (it came from the allowed origin); absent: none. */
  allowOrigin?: string;
  /** It sent Accept-Language named by its own Connection (the upstream must not receive it), or not named (it must, as sent). */
  hop?: 'listed' | 'unlisted';
  /**
   * Its body is written only once a 100 Continue invites it (Expect: 100-continue). A refusal in its place (its key
   * over a quota, say) answers the request without its body, and closes the connection: the body may still come.
   */
  waitsForContinue?: true;
  /**
   * It asked for 100 Continue (Expect: 100-continue), whether it waits for it or sends its body at once. A refusal before its body
   * closes the connection (the gateway cannot tell whether the body follows): requests pipelined behind it may go unanswered.
   */
  expectsContinue?: true;
}

export interface ClientScript {
  /** Which of the run's API keys this client uses. */
  key: number;
  pieces: Piece[];
  /** The complete requests in the order written. */
  requests: SentRequest[];
  /** Bytes that do not parse follow the complete requests. */
  garbage: boolean;
  /**
   * The client leaves after writing this many pieces and waiting `delayMs`, as `how` says (absent: `destroy`). With `half-record`,
   * the last of those pieces goes out as half a TLS record only: none of its bytes reach the gateway's HTTP parser.
   */
  earlyClose?: { pieces: number; delayMs: number; how?: LeaveHow };
  /** TLS only: a hostile TLS client (see TlsHostility). Absent: a well-behaved TLS client, or a TCP one. */
  tls?: TlsHostility;
}

/**
 * How a client leaves early. destroy: the socket destroyed (FIN, and over TLS no close_notify); close-notify: the TLS session
 * closed properly (close_notify, then FIN; over TCP the FIN alone, a half-close), the client reading on until the gateway closes;
 * reset: a TCP reset (RST), whatever the session; half-record (TLS only): half a TLS record written, then a TCP reset.
 */
export const LEAVE_HOWS = ['destroy', 'close-notify', 'reset', 'half-record'] as const;
export type LeaveHow = (typeof LEAVE_HOWS)[number];

/**
 * A TLS client that does not behave. handshake-cut: the first `at` (a fraction, 0 < at <= 1) of a ClientHello record written in
 * the clear, then, once the gateway answered it or at once (`awaitServer`), a FIN or a reset; the script's requests are never sent.
 * plaintext: the script's bytes written as plain HTTP to the TLS port: not one of them is a request; a request line is answered
 * one 400 in the clear, then the close (tls-invariants.ts). renegotiate: a TLS 1.2 session, renegotiation asked for after `afterPieces` pieces were written; the listener must refuse
 * it (no renegotiation), the rest of the script is written only if it accepted.
 */
export type TlsHostility =
  | { kind: 'handshake-cut'; at: number; awaitServer: boolean; leave: 'end' | 'reset' }
  | { kind: 'plaintext' }
  | { kind: 'renegotiate'; afterPieces: number };

/** Whether the case can only run over TLS: a hostile TLS client, or a client that leaves mid-record. */
export function needsTls(edgeCase: EdgeCase): boolean {
  return edgeCase.clients.some((client) => client.tls !== undefined || client.earlyClose?.how === 'half-record');
}

/** The stray bytes a buggy backend writes after an answer (UpstreamBehaviour.strayKind). */
export type StrayKind = 'response' | 'crlf' | 'garbage';

/**
 * How the upstream answers one request. The tag it read goes into the body (`name`, or `message` for
 * error statuses), since only status, framing headers and body are relayed.
 */
export interface UpstreamBehaviour {
  /**
   * 2xx success, 204/304 without body, 4xx/5xx with an Error-shaped body (unless `offContract` or `plainErrorBody` says
   * otherwise); never 500 (the gateway relays it, and 500 is forbidden).
   */
  status: number;
  /** Error statuses only: a body that is not Error-shaped (the gateway wraps it). */
  plainErrorBody?: boolean;
  framing: 'length' | 'chunked';
  /**
   * Transfer-Encoding lines other than `chunked` alone (`gzip, chunked`, `identity`, the field over two
   * lines...), on a chunk-framed body: framing the gateway cannot relay, so the answer must be a 502 Error.
   */
  transferCoding?: string[];
  /** Content-Length lies (length framing): `shorter` cuts the tail of a padding field, so the tag stays visible. */
  lie: 'none' | 'shorter' | 'longer';
  /** Interim answers written first: 100, 103. */
  interim: number[];
  /** Answer `101 Switching Protocols` to a plain request instead. */
  upgrade: boolean;
  /** Before anything is written. */
  headDelayMs: number;
  /** Between the head and the body. */
  bodyDelayMs: number;
  /** The socket is destroyed halfway through the body. */
  closeMidBody: boolean;
  /** `Connection: close`, and the upstream ends the socket after the answer. */
  connectionClose: boolean;
  /** A second, complete response tagged like this one is appended in the same write. */
  extraSameWrite: boolean;
  /**
   * A bare CRLF appended in the same write, just after the answer (after a chunked body's last chunk and trailers, or the bytes its
   * Content-Length counts): the gateway's parser skips it, so only the gateway's own look at the bytes finds it outside the answer,
   * and the connection must carry no other request. Absent in fixtures written before: none.
   */
  crlfSameWrite?: boolean;
  /** A chunked body's last chunk is followed by trailer fields (never relayed). Absent: none. */
  trailers?: boolean;
  /**
   * The answer carries `Content-Language: de`, named by a `Connection` line of its own (`listed`: for the gateway alone, never
   * relayed) or not (`unlisted`: relayed as any representation field). Answers on one connection differ, so a gateway that reused
   * one answer's list for the next would relay or drop the wrong field. Absent in fixtures written before: `none`.
   */
  hopField?: 'none' | 'listed' | 'unlisted';
  /**
   * After a HEAD, 204 or 304 only: the body a buggy backend owes, written late as a complete tagged
   * response, when the next request arrives on the connection or after `lateMs`, whichever is first.
   */
  late: boolean;
  lateMs: number;
  /**
   * A slow body: written in two parts, up to and including the tag, then the rest once the client has the first part or after
   * this long, whichever is first (below the idle timeout, so a gateway that holds the answer is not timed out for it).
   */
  trickleMs?: number;
  /**
   * The answer's X-Request-Id: the one the gateway sent (`echo`), none (`missing`), or another request's (`wrong`). Absent in
   * fixtures written before the gateway bound answers to requests: none.
   */
  answerId?: 'echo' | 'missing' | 'wrong';
  /**
   * After any answer that keeps its connection: stray bytes, owed like `late` (written when the next request arrives on the
   * connection, or after `lateMs`), of the kind `strayKind` says. A stray response would be read by the next request there as
   * its own answer; a bare CRLF is skipped by the gateway's parser; garbage breaks the next answer's parse.
   */
  strayAfter?: boolean;
  /** What the stray bytes are: a complete response without X-Request-Id (absent: this), a bare CRLF, or a few bytes that are not HTTP. */
  strayKind?: StrayKind;
  /** How the answer departs from the interface document (see contract-bodies.ts); absent: the on-contract tagged answer. */
  offContract?: OffContractKind;
  /**
   * What the interface document says of the answer as the upstream writes it, known from how it was generated (never by asking
   * the gateway's checker): `on`; `off-head`, its head already breaks it (media type, a required header); `off-body`, its body
   * does (shape, not JSON, a cut the Content-Length hides). Absent in fixtures written before the gateway checked answers.
   */
  contract?: ContractVerdict;
}

/** Every way the harness's upstream answers off the interface document; each one is off it whatever else the answer does. */
export const OFF_CONTRACT_KINDS = [
  // Success statuses: a body that is not the operation's Pet or Pets.
  'missing-category',
  'id-as-string',
  'status-outside-enum',
  'extra-nesting',
  'error-shaped',
  // Error statuses: a Pet where an Error belongs, an Error whose status is not the answer's.
  'pet-shaped-error',
  'error-status-mismatch',
  // Any status with a body: a media type the document does not declare, or JSON declared and something else sent.
  'html',
  'not-json',
  // 429 only: without the Retry-After the document requires.
  'no-retry-after',
] as const;
export type OffContractKind = (typeof OFF_CONTRACT_KINDS)[number];
export type ContractVerdict = 'on' | 'off-head' | 'off-body';

/** How the gateway checks the backend's answers (config `contractResponses`); `report` checks every one (sample 1). */
export type ContractMode = 'off' | 'report' | 'enforce';

/** Gateway settings that vary per case. */
export interface GatewaySettings {
  maxSockets: number;
  timeoutMs: number;
  totalTimeoutMs: number;
  /** Absent in fixtures written before the gateway checked answers: the configuration's default (report, 5 % sampled). */
  contractMode?: ContractMode;
  /** The interface document served (documents.ts); absent: the project's. */
  document?: HarnessDocument;
  /** `upstream.requestIdEcho`; absent (fixtures from before): the configuration's default, `auto`. */
  requestIdEcho?: 'off' | 'auto' | 'required';
  /** Every request shadowed to a staging that refuses connections (config `shadow`); absent (fixtures from before): off. */
  shadow?: boolean;
}

export interface EdgeCase {
  gateway: GatewaySettings;
  clients: ClientScript[];
  /** By tag; a request without an entry gets a plain answer. */
  upstream: Record<string, UpstreamBehaviour>;
}

/** The answer a well-behaved backend gives. */
export const PLAIN_ANSWER: UpstreamBehaviour = {
  status: 200,
  framing: 'length',
  lie: 'none',
  interim: [],
  upgrade: false,
  headDelayMs: 0,
  bodyDelayMs: 0,
  closeMidBody: false,
  connectionClose: false,
  extraSameWrite: false,
  late: false,
  lateMs: 0,
  answerId: 'echo',
  contract: 'on',
};
