// A peer for the bench: fast-gateway (restana and fast-proxy-lite) doing the gateway's job with middlewares of its own
// kind: the key, a per-key limit counted in Redis (one script a request), prom-client metrics and one access line a
// request (pino, to a file).
//   PEER_PORT UPSTREAM_ORIGIN REDIS_URL API_KEY_PEPPER KEY_PREFIX ACCESS_LOG node bench/peers/fast-gateway.mjs
import gateway from 'fast-gateway';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { announce, authenticate, errorBody, redis, settings } from './job.mjs';

const accessLog = pino(pino.destination({ dest: settings.accessLog, sync: false }));
const registry = new Registry();
const requests = new Counter({ name: 'requests_total', help: 'Requests.', labelNames: ['method', 'status'], registers: [registry] });
const duration = new Histogram({ name: 'request_duration_seconds', help: 'Duration.', labelNames: ['method', 'status'], registers: [registry] });

// A fixed window a minute per key: the count and the window's remaining time in one round trip.
redis.defineCommand('hit', {
  numberOfKeys: 1,
  lua: "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return { n, redis.call('PTTL', KEYS[1]) }",
});

function refuse(res, status, code, message, headers = {}) {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('content-type', 'application/json');
  res.end(errorBody(code, message, status));
}

async function guard(req, res, next) {
  const started = process.hrtime.bigint();
  res.once('finish', () => {
    const labels = { method: req.method, status: String(res.statusCode) };
    requests.inc(labels);
    duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    accessLog.info({ method: req.method, path: req.url, status: res.statusCode, keyId: req.apiKey?.id });
  });
  const key = await authenticate(req.headers.authorization);
  if (key === undefined) return refuse(res, 401, 'unauthorized', 'A valid API key is required');
  req.apiKey = key;
  const [count, ttl] = await redis.hit(`peer:rate:${key.id}`, 60_000);
  res.setHeader('ratelimit', `limit=${key.perMinute}, remaining=${Math.max(0, key.perMinute - count)}, reset=${Math.ceil(ttl / 1000)}`);
  if (count > key.perMinute) return refuse(res, 429, 'rate_limited', 'Rate limit exceeded', { 'retry-after': String(Math.ceil(ttl / 1000)) });
  return next();
}

const server = gateway({
  routes: [
    {
      prefix: '/v1',
      prefixRewrite: '/v1',
      target: settings.upstream,
      methods: ['GET'],
      middlewares: [guard],
      hooks: {
        // The client's key never reaches the backend.
        rewriteRequestHeaders(_req, headers) {
          const { authorization: _dropped, ...forwarded } = headers;
          return forwarded;
        },
      },
    },
  ],
});
server.get('/metrics', async (_req, res) => {
  res.setHeader('content-type', registry.contentType);
  res.end(await registry.metrics());
});

await server.start(settings.port, '127.0.0.1');
announce(server.getServer().address().port);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
