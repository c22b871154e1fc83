// The one error type of the gateway: a stable code, the HTTP status it maps to, and the cause.

/** Every code the gateway can answer with, and its usual status. Stable, snake_case, documented in docs/reference.md, "Error codes". */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  /** An experimental or beta operation this environment denies, or serves only to keys that opted in (config `stability`). */
  stability_not_allowed: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  gone: 410,
  /** A deprecated operation refused during a brownout, before its sunset (Retry-After at the window's end). */
  brownout: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  expectation_failed: 417,
  rate_limited: 429,
  /** The key's daily or monthly quota is used up (Retry-After at the period's end). */
  quota_exceeded: 429,
  header_fields_too_large: 431,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
  upstream_unavailable: 503,
  gateway_timeout: 504,
  /** An upstream error answer that was not Error-shaped; the status is the upstream's. */
  upstream_error: 502,
  /** The backend answered 401 or 403: it refused the gateway, not the client, whose key is never forwarded. */
  upstream_refused_identity: 502,
  /** The TLS handshake with the backend failed (its certificate untrusted, expired or for another name; ours refused...). */
  upstream_tls_failed: 502,
  /** The backend's answer broke the interface document, checked under `contractResponses` mode `enforce`: not relayed. */
  upstream_contract_violation: 502,
  /** The backend's answer carried an X-Request-Id other than the one sent (or none, where `upstream.requestIdEcho` asks for it): not relayed. */
  upstream_answer_mismatch: 502,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Retry-After of the 503s while a shared part is briefly unable: a second is what a Redis failover or a burst usually takes. */
export const RETRY_SOON = { 'Retry-After': '1' } as const;

/** The interface's Error body. */
export interface ErrorBody {
  code: string;
  message: string;
  status: number;
}

export interface GatewayErrorOptions {
  /** Response headers that belong to this refusal (Allow, WWW-Authenticate, Retry-After...). */
  headers?: Readonly<Record<string, string>>;
  cause?: unknown;
  /** Overrides the status implied by the code (used when wrapping an upstream error). */
  status?: number;
}

/** A refusal or failure the gateway answers with an Error body. */
export class GatewayError extends Error {
  /** One of the closed union, so `switch (error.code)` narrows; an upstream's own Error body is relayed, never made one. */
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, status: this.status };
  }
}

export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const candidate = value as Record<string, unknown>;
  return typeof candidate.code === 'string' && typeof candidate.message === 'string' && Number.isInteger(candidate.status);
}
