// A peer for the bench: Fastify 5 doing the gateway's job with the plugins a team would pick: @fastify/reply-from to the
// backend, @fastify/rate-limit counted in Redis per key, fastify-metrics, and one access line a request (pino, to a file).
//   PEER_PORT UPSTREAM_ORIGIN REDIS_URL API_KEY_PEPPER KEY_PREFIX ACCESS_LOG node bench/peers/fastify.mjs
import rateLimit from '@fastify/rate-limit';
import replyFrom from '@fastify/reply-from';
import Fastify from 'fastify';
import metrics from 'fastify-metrics';
import pino from 'pino';
import { announce, authenticate, errorBody, redis, settings } from './job.mjs';

const accessLog = pino(pino.destination({ dest: settings.accessLog, sync: false }));
const app = Fastify({ logger: false, disableRequestLogging: true });

await app.register(metrics.default ?? metrics, { endpoint: '/metrics' });
await app.register(replyFrom, { base: settings.upstream, undici: { connections: 256 } });

app.addHook('onRequest', async (request, reply) => {
  if (request.url === '/metrics') return;
  const key = await authenticate(request.headers.authorization);
  if (key === undefined) {
    reply
      .code(401)
      .type('application/json')
      .send(errorBody('unauthorized', 'A valid API key is required', 401));
    return reply;
  }
  request.apiKey = key;
});

await app.register(rateLimit, {
  // After authentication: the limit is the key's, counted in Redis across replicas.
  hook: 'preHandler',
  redis,
  timeWindow: 60_000,
  max: (request) => request.apiKey?.perMinute ?? 1,
  keyGenerator: (request) => request.apiKey?.id ?? request.ip,
  allowList: (request) => request.url === '/metrics',
  errorResponseBuilder: (_request, context) => ({ code: 'rate_limited', message: `Rate limit exceeded, retry in ${context.after}`, status: 429 }),
});

app.addHook('onResponse', async (request, reply) => {
  accessLog.info({
    requestId: request.id,
    method: request.method,
    path: request.url,
    status: reply.statusCode,
    keyId: request.apiKey?.id,
    durationMs: reply.elapsedTime,
  });
});

app.get('/v1/*', (request, reply) => {
  reply.from(request.url, {
    // The client's key never reaches the backend.
    rewriteRequestHeaders: (_request, headers) => {
      const { authorization: _dropped, ...forwarded } = headers;
      return forwarded;
    },
  });
});

const address = await app.listen({ port: settings.port, host: '127.0.0.1' });
announce(Number(new URL(address).port));
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
