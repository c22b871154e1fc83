// Names why an upstream exchange failed and maps that to the gateway's Error: pure tables, tested row by row.
import { GatewayError } from '../errors/gateway-error.ts';

/** Every way an exchange can fail; metrics are labelled with these (and initialised at 0 for each). */
export const UPSTREAM_FAILURE_KINDS = [
  'connect_timeout',
  'headers_timeout',
  'idle_timeout',
  'total_timeout',
  'refused',
  'reset',
  'dns',
  'protocol',
  'other',
] as const;

export type UpstreamFailureKind = (typeof UPSTREAM_FAILURE_KINDS)[number];

/** A failed exchange, raised by the exchange itself with the kind it observed (a timer, an upgrade...). */
export class UpstreamFailure extends Error {
  readonly kind: UpstreamFailureKind;

  constructor(kind: UpstreamFailureKind, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'UpstreamFailure';
    this.kind = kind;
  }
}

const KIND_BY_CODE: Readonly<Record<string, UpstreamFailureKind>> = {
  ETIMEDOUT: 'connect_timeout',
  ECONNREFUSED: 'refused',
  EHOSTUNREACH: 'refused',
  ENETUNREACH: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ECONNABORTED: 'reset',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  // undici's own (the exchange's client): its timers and what it makes of the upstream's bytes.
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'headers_timeout',
  UND_ERR_BODY_TIMEOUT: 'idle_timeout',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  UND_ERR_DESTROYED: 'reset',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'protocol',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'protocol',
  UND_ERR_INFO: 'protocol',
};

/** undici's words for a 101, or a final 100, to a plain request: the socket is closed, but the upstream broke the protocol. */
const NOT_AN_ANSWER = /^bad (upgrade|response)$/;

/** The kind of a socket, client or parser error; llhttp's `HPE_*` codes mean the upstream did not speak HTTP/1.1. */
export function classifyUpstreamFailure(error: unknown): UpstreamFailureKind {
  if (error instanceof UpstreamFailure) return error.kind;
  // undici's parser errors carry no code: their name says what they are.
  if (error instanceof Error && error.name === 'HTTPParserError') return 'protocol';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'other';
  if (code.startsWith('HPE_')) return 'protocol';
  if (code === 'UND_ERR_SOCKET' && error instanceof Error && NOT_AN_ANSWER.test(error.message)) return 'protocol';
  return KIND_BY_CODE[code] ?? 'other';
}

const WHY: Readonly<Record<UpstreamFailureKind, string>> = {
  connect_timeout: 'did not accept a connection in time',
  headers_timeout: 'did not answer in time',
  idle_timeout: 'stopped sending its answer',
  total_timeout: 'did not finish its answer in time',
  refused: 'refused the connection',
  reset: 'closed the connection before answering',
  dns: 'could not be found',
  protocol: 'answered with something other than an HTTP response',
  other: 'could not be reached',
};

/** Timeouts are 504; everything else is 502. */
export function upstreamFailureError(kind: UpstreamFailureKind, cause?: unknown): GatewayError {
  const timedOut = kind.endsWith('_timeout');
  return new GatewayError(timedOut ? 'gateway_timeout' : 'bad_gateway', `The pet store backend ${WHY[kind]}`, { cause });
}

/** What a log line may say about a failure: never the raw bytes a parser error carries (`rawPacket`). */
export function describeUpstreamFailure(error: unknown): { kind: UpstreamFailureKind; message: string; code?: string } {
  const kind = classifyUpstreamFailure(error);
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof UpstreamFailure ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? { kind, message, code } : { kind, message };
}
