// Maps a failed upstream exchange to the gateway's Error: a pure table, tested row by row.
import { GatewayError } from '../errors/gateway-error.ts';

export type UpstreamFailureKind = 'timeout' | 'refused' | 'reset' | 'dns' | 'other';

/** Raised by the gateway itself when the upstream stays silent past the configured timeout. */
export const UPSTREAM_TIMEOUT = 'UPSTREAM_TIMEOUT';

const KIND_BY_CODE: Readonly<Record<string, UpstreamFailureKind>> = {
  [UPSTREAM_TIMEOUT]: 'timeout',
  ETIMEDOUT: 'timeout',
  ESOCKETTIMEDOUT: 'timeout',
  ECONNREFUSED: 'refused',
  EHOSTUNREACH: 'refused',
  ENETUNREACH: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ECONNABORTED: 'reset',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
};

export function classifyUpstreamFailure(error: unknown): UpstreamFailureKind {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && KIND_BY_CODE[code]) || 'other';
}

export function upstreamFailureError(error: unknown): GatewayError {
  const kind = classifyUpstreamFailure(error);
  if (kind === 'timeout') {
    return new GatewayError('gateway_timeout', 'The pet store backend did not answer in time', { cause: error });
  }
  const why = {
    refused: 'refused the connection',
    reset: 'closed the connection before answering',
    dns: 'could not be found',
    other: 'could not be reached',
  }[kind];
  return new GatewayError('bad_gateway', `The pet store backend ${why}`, { cause: error });
}
