// The typed state one request carries through the pipeline, kept in res.locals.gateway.
import type { Response } from 'express';
import type { Consumer } from '../auth/key-store.ts';
import type { Operation } from '../contract/operations.ts';
import type { GatewayError } from '../errors/gateway-error.ts';
import type { UpstreamFailureKind } from '../proxy/upstream-failure.ts';

export interface RequestContext {
  requestId: string;
  /** process.hrtime.bigint() when the request entered the gateway. */
  startedAt: bigint;
  /** The interface operation the method and path resolved to, when one did. */
  operation?: Operation;
  /** The path parameters of that operation, decoded. */
  pathParams?: Readonly<Record<string, string>>;
  /** The request body as raw bytes, for operations that take one: forwarded exactly as received. */
  rawBody?: Buffer;
  /** 100 Continue was sent: the client was invited to send the body it announced. */
  continueSent?: boolean;
  /** The authenticated caller. */
  consumer?: Consumer;
  /** Why the request was refused, when it was. */
  error?: GatewayError;
  /** The upstream's status, once its response headers arrived. */
  upstreamStatus?: number;
  /** Why the upstream exchange failed, when it did. */
  upstreamFailure?: UpstreamFailureKind;
  /** Milliseconds from sending the request upstream to the end of the upstream's response. */
  upstreamMs?: number;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express types its Locals through this global namespace.
  namespace Express {
    interface Locals {
      gateway: RequestContext;
    }
  }
}

export function contextOf(res: Response): RequestContext {
  return res.locals.gateway;
}
