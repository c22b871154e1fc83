// The upstream exchange as one function: send the request, relay the answer, resolve with what happened.
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { classifyUpstreamFailure, UpstreamFailure, type UpstreamFailureKind } from './upstream-failure.ts';
import { relayUpstreamResponse } from './upstream-response.ts';

export interface UpstreamOptions {
  /** The upstream base address, ending in /v1. */
  baseUrl: string;
  /** No byte from the upstream for this long: 504 (headers_timeout before the answer began, idle_timeout after). */
  idleTimeoutMs: number;
  /** A new upstream connection must be established within this. */
  connectTimeoutMs: number;
  /** The whole exchange, to the last byte of the response, must finish within this. */
  totalTimeoutMs: number;
  maxSockets: number;
  maxFreeSockets: number;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query below the base address, e.g. `/pets?limit=2`. */
  path: string;
  headers: OutgoingHttpHeaders;
  /** Sent with the Content-Length the headers declare. */
  body: Buffer | undefined;
}

/** The proxy stage's slice of the request record, written as the exchange settles. */
export interface UpstreamSlice {
  /** The upstream's status, once its answer began. */
  status?: number;
  /** Milliseconds from sending the request to the end of the relayed answer. */
  ms?: number;
  /** Why the exchange failed or was cut short, when it was. */
  failure?: UpstreamFailureKind;
}

/** How an exchange ended once the upstream's answer began to be relayed. */
export interface ExchangeOutcome {
  /** The upstream's status. */
  status: number;
  /** Milliseconds from sending the request to the end of the relayed response. */
  upstreamMs: number;
  /** Set when the answer was cut short after its head was relayed (the client sees a truncated response). */
  failure?: UpstreamFailureKind;
  /** The client went away before the answer was complete. */
  clientClosed?: boolean;
}

/**
 * Resolves once the answer is relayed, or rejects with an UpstreamFailure when nothing was relayed
 * yet (so the caller answers with an Error). The response is written here and nowhere else.
 */
export type Exchange = (request: UpstreamRequest, res: ServerResponse, onSettled?: ExchangeObserver) => Promise<ExchangeOutcome>;

/**
 * Told how the exchange ended, synchronously, before the promise settles: the response's `close`
 * (which feeds metrics and the access log) can fire before a continuation of the promise runs.
 */
export type ExchangeObserver = (outcome: ExchangeOutcome | UpstreamFailure) => void;

export interface Upstream {
  exchange: Exchange;
  /** host[:port], as the Host header the upstream expects. */
  host: string;
  /** Closes pooled connections (on shutdown). */
  close(): void;
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const target = new URL(options.baseUrl);
  const secure = target.protocol === 'https:';
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxFreeSockets, scheduling: 'lifo' as const };
  const agent = secure ? new HttpsAgent(agentOptions) : new Agent(agentOptions);
  const send = secure ? httpsRequest : httpRequest;
  const basePath = target.pathname.replace(/\/$/, '');
  const port = target.port ? Number(target.port) : secure ? 443 : 80;

  function exchange(request: UpstreamRequest, res: ServerResponse, onSettled?: ExchangeObserver): Promise<ExchangeOutcome> {
    // The client left while an earlier stage was waiting (Redis, the breaker): nothing to send, nothing to count.
    if (res.destroyed) return Promise.resolve({ status: 0, upstreamMs: 0, clientClosed: true });
    return new Promise((resolve, reject) => {
      const startedAt = performance.now();
      let settled = false;
      let answered = false;
      let response: IncomingMessage | undefined;
      const upstreamReq: ClientRequest = send({
        agent,
        hostname: target.hostname,
        port,
        method: request.method,
        path: basePath + request.path,
        headers: request.headers,
        setHost: false,
      });

      const totalTimer = setTimeout(() => abandon('total_timeout', `no complete answer within ${options.totalTimeoutMs} ms`), options.totalTimeoutMs);
      let connectTimer: NodeJS.Timeout | undefined;

      function settle(): boolean {
        if (settled) return false;
        settled = true;
        clearTimeout(totalTimer);
        clearTimeout(connectTimer);
        res.off('close', onClientClose);
        return true;
      }
      function succeed(outcome: Omit<ExchangeOutcome, 'upstreamMs'>): void {
        if (!settle()) return;
        const complete = { ...outcome, upstreamMs: performance.now() - startedAt };
        onSettled?.(complete);
        resolve(complete);
      }
      /** Ends the exchange as failed: an Error answer if nothing was relayed, a cut response otherwise. */
      function abandon(kind: UpstreamFailureKind, message: string, cause?: unknown): void {
        if (settled) return;
        upstreamReq.destroy();
        if (answered) {
          // A client that stopped reading stalls the relay, and so the upstream: the client's doing, not the upstream's.
          const clientStalled = res.writableNeedDrain;
          res.destroy();
          succeed(clientStalled ? { status: response?.statusCode ?? 502, clientClosed: true } : { status: response?.statusCode ?? 502, failure: kind });
          return;
        }
        if (!settle()) return;
        const failure = new UpstreamFailure(kind, message, { cause });
        onSettled?.(failure);
        reject(failure);
      }
      function onClientClose(): void {
        if (res.writableFinished) return;
        upstreamReq.destroy();
        succeed({ status: response?.statusCode ?? 0, clientClosed: true });
      }
      res.once('close', onClientClose);

      upstreamReq.once('socket', (socket) => {
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => abandon('connect_timeout', `no connection within ${options.connectTimeoutMs} ms`), options.connectTimeoutMs);
        socket.once('connect', () => clearTimeout(connectTimer));
      });
      upstreamReq.setTimeout(options.idleTimeoutMs, () =>
        abandon(response ? 'idle_timeout' : 'headers_timeout', `upstream silent for ${options.idleTimeoutMs} ms`),
      );
      // No operation upgrades: a 101 to a plain request leaves a socket that speaks something else.
      upstreamReq.once('upgrade', (_res: IncomingMessage, socket) => {
        socket.destroy();
        abandon('protocol', 'the upstream switched protocols on a plain request');
      });
      upstreamReq.once('error', (error) => abandon(classifyUpstreamFailure(error), error.message, error));
      upstreamReq.once('close', () => {
        // Closed without a response and without an error event (e.g. an unsolicited upgrade Node dropped).
        if (!response) abandon('reset', 'the upstream closed the connection without answering');
      });
      upstreamReq.once('response', (upstreamRes: IncomingMessage) => {
        response = upstreamRes;
        upstreamRes.once('error', (error) => {
          // An answer that breaks off without a known cause is a reset connection.
          const kind = classifyUpstreamFailure(error);
          abandon(kind === 'other' ? 'reset' : kind, 'the answer was cut short', error);
        });
        upstreamRes.once('close', () => {
          if (!upstreamRes.complete) abandon('reset', 'the answer was cut short');
        });
        relayUpstreamResponse(upstreamRes, res, {
          onHeadRelayed: () => {
            answered = true;
          },
          onRelayed: () => succeed({ status: upstreamRes.statusCode ?? 502 }),
        });
      });
      upstreamReq.end(request.body);
    });
  }

  return {
    exchange,
    host: target.host,
    close: () => agent.destroy(),
  };
}
