// Forwards a validated request to the upstream of the gateway's environment over a keep-alive pool.
import { Agent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware, proxyEventsPlugin, type Plugin } from 'http-proxy-middleware';
import { sendError } from '../errors/send-error.ts';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';
import { UPSTREAM_TIMEOUT, upstreamFailureError, type UpstreamFailureKind, classifyUpstreamFailure } from './upstream-failure.ts';
import { relayUpstreamResponse } from './upstream-response.ts';

export interface ProxyOptions {
  /** The upstream base address, ending in /v1. */
  baseUrl: string;
  /** No byte from the upstream for this long: 504. */
  timeoutMs: number;
  /** A new upstream connection must be established within this. */
  connectTimeoutMs: number;
  /** The whole exchange, to the last byte of the response, must finish within this. */
  totalTimeoutMs: number;
  maxSockets: number;
  maxFreeSockets: number;
  /** Told of every failed exchange, for metrics and logs. */
  onFailure?: (kind: UpstreamFailureKind, req: Request, error: unknown) => void;
}

/** Request headers that describe the client's connection or credentials, never the upstream's business. */
const NOT_FORWARDED = ['authorization', 'proxy-authorization', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade'];

function forwardedFor(req: Request): string {
  const previous = req.headers['x-forwarded-for'];
  const peer = req.socket.remoteAddress ?? 'unknown';
  return previous ? `${Array.isArray(previous) ? previous.join(', ') : previous}, ${peer}` : peer;
}

/** The path the upstream sees: the operation's template filled with the validated, re-encoded parameters. */
export function canonicalPath(req: Request, res: Response): string {
  const { operation, pathParams = {} } = res.locals.gateway;
  const path = operation!.pathTemplate.replace(/\{([^}]+)\}/g, (_all, name: string) => encodeURIComponent(pathParams[name] ?? ''));
  const query = req.url.indexOf('?');
  return query === -1 ? path : path + req.url.slice(query);
}

export interface Proxy {
  handler: RequestHandler;
  /** Closes pooled upstream connections (on shutdown). */
  close(): void;
}

export function createProxy(options: ProxyOptions): Proxy {
  const target = new URL(options.baseUrl);
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxFreeSockets, scheduling: 'lifo' as const };
  const agent = target.protocol === 'https:' ? new HttpsAgent(agentOptions) : new Agent(agentOptions);

  function prepareUpstreamRequest(proxyReq: ClientRequest, req: Request, res: Response): void {
    const context = res.locals.gateway;
    for (const name of NOT_FORWARDED) proxyReq.removeHeader(name);
    const connectionTokens = req.headers.connection?.split(',') ?? [];
    for (const token of connectionTokens) proxyReq.removeHeader(token.trim());
    // The upstream connection is the pool's, whatever the client asked of its own.
    proxyReq.setHeader('connection', 'keep-alive');
    proxyReq.setHeader(REQUEST_ID_HEADER, context.requestId);
    proxyReq.setHeader('x-forwarded-for', forwardedFor(req));
    proxyReq.setHeader('x-forwarded-proto', req.protocol);
    if (req.headers.host) proxyReq.setHeader('x-forwarded-host', req.headers.host);
    const startedAt = process.hrtime.bigint();
    proxyReq.once('response', (upstream) => {
      upstream.once('end', () => {
        context.upstreamMs = Number(process.hrtime.bigint() - startedAt) / 1e6;
      });
    });
    const timedOut = (what: string) => Object.assign(new Error(what), { code: UPSTREAM_TIMEOUT });
    proxyReq.setTimeout(options.timeoutMs, () => proxyReq.destroy(timedOut(`upstream silent for ${options.timeoutMs} ms`)));
    const socket = proxyReq.socket;
    if (socket?.connecting) {
      const connectTimer = setTimeout(() => proxyReq.destroy(timedOut(`no upstream connection within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs);
      socket.once('connect', () => clearTimeout(connectTimer));
      proxyReq.once('close', () => clearTimeout(connectTimer));
    }
    // Before the response: 504. After its headers were relayed: the response is cut short.
    const totalTimer = setTimeout(() => {
      const error = timedOut(`upstream exchange over ${options.totalTimeoutMs} ms`);
      if (res.headersSent) res.destroy(error);
      else proxyReq.destroy(error);
    }, options.totalTimeoutMs);
    res.once('close', () => clearTimeout(totalTimer));
    // The body was read (and validated) by the gateway; the upstream gets the same bytes.
    if (context.rawBody) proxyReq.write(context.rawBody);
  }

  const middleware = createProxyMiddleware<Request, Response>({
    target: target.href,
    changeOrigin: true,
    agent,
    // Only the plugin that wires `on`: errors are answered below, and logging is the gateway's own.
    ejectPlugins: true,
    // Declared for node's request types only; it just forwards events, whatever the request type.
    plugins: [proxyEventsPlugin as unknown as Plugin<Request, Response>],
    selfHandleResponse: true,
    pathRewrite: (_path, req, res) => (res ? canonicalPath(req, res) : undefined),
    on: {
      proxyReq: prepareUpstreamRequest,
      proxyRes: (proxyRes, _req, res) => {
        res.locals.gateway.upstreamStatus = proxyRes.statusCode;
        relayUpstreamResponse(proxyRes, res);
      },
      error: (error, req, res) => {
        if (!('setHeader' in res)) return; // a socket: only for WebSocket upgrades, which no operation uses
        const kind = classifyUpstreamFailure(error);
        res.locals.gateway.upstreamFailure = kind;
        options.onFailure?.(kind, req, error);
        const refusal = upstreamFailureError(error);
        res.locals.gateway.error = refusal;
        if (res.headersSent) res.destroy();
        else sendError(res, refusal);
      },
      econnreset: (_error, _req, res) => {
        // The client went away; nothing to answer.
        res.destroy();
      },
    },
  });

  return {
    handler: middleware as unknown as RequestHandler,
    close: () => agent.destroy(),
  };
}
