// An in-memory pet store that implements the interface document: the upstream for demos, tests and benchmarks.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import { createServer } from '../http/node-http.ts';
import { listen } from '../server/server.ts';

export interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status?: 'available' | 'pending' | 'sold';
}

const STATUSES = new Set(['available', 'pending', 'sold']);

export const SAMPLE_PETS: readonly Pet[] = [
  { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
  { id: 2, name: 'Mittens', categoryId: 2, status: 'pending' },
  { id: 3, name: 'Goldie', categoryId: 3, status: 'sold' },
  { id: 4, name: 'Biscuit', categoryId: 1, status: 'available' },
  { id: 5, name: 'Shadow', categoryId: 2 },
];

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

function fail(res: ServerResponse, status: number, code: string, message: string): void {
  send(res, status, { code, message, status });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Who called, as the gateway's signed identity token says: `sub` (the API key id) and the `consumer` claim. */
export interface Caller {
  sub: string;
  consumer: string;
}

/** Checking the gateway's caller identity token, as a real backend should. */
export interface SampleBackendIdentity {
  /** The gateway admin listener's JWKS, e.g. http://127.0.0.1:9090/.well-known/jwks.json. */
  jwksUrl: string;
  /** Expected `iss` (the gateway's upstreamIdentity.issuer). */
  issuer: string;
  /** Expected `aud` (the gateway's upstreamIdentity.audience). */
  audience: string;
  /** Clock skew allowed between gateway and backend on `exp` and `iat`, in seconds. Default 5. */
  clockToleranceSeconds?: number;
}

export interface SampleBackend {
  server: Server;
  port: number;
  /** Base address as the gateway's UPSTREAM_URL wants it. */
  baseUrl: string;
  /** Requests received, newest last: tests read what the gateway forwarded. */
  received: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string; caller?: Caller }>;
  close(): Promise<void>;
}

export interface SampleBackendOptions {
  port?: number;
  host?: string;
  /** What a busy or refused port is blamed on, e.g. `DEMO_BACKEND_PORT`: the setting the operator changes. */
  portSetting?: string;
  pets?: readonly Pet[];
  /** Keep every received request in `received` (tests); off by default so a long demo does not grow. */
  record?: boolean;
  /** When set, every request needs a valid caller identity token from the gateway (else 401 unauthorized). */
  identity?: SampleBackendIdentity;
  /** Receives the backend's log lines (a pet created, with its caller); silent by default. */
  log?: (line: Record<string, unknown>) => void;
}

type Verification = { caller: Caller } | { refusal: { status: 401 | 503; code: string; message: string; challenge?: string } };

/** JWKS trouble is the backend's to report (503), not the caller's fault (401). */
const JWKS_UNAVAILABLE = new Set(['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID']);

function createCallerVerifier(identity: SampleBackendIdentity): (authorization: string | undefined) => Promise<Verification> {
  // Fetched on first use and cached (jose: 10 min; an unknown kid refetches at most every 30 s).
  const keys = createRemoteJWKSet(new URL(identity.jwksUrl), { timeoutDuration: 2000 });
  const verifyOptions = {
    issuer: identity.issuer,
    audience: identity.audience,
    algorithms: ['EdDSA', 'ES256'],
    typ: 'JWT',
    requiredClaims: ['sub', 'iat', 'exp', 'jti', 'consumer'],
    clockTolerance: identity.clockToleranceSeconds ?? 5,
  };
  return async function verifyCaller(authorization) {
    const token = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(authorization ?? '')?.[1];
    if (token === undefined) {
      // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
      return {
        refusal: {
          status: 401,
          code: 'unauthorized',
          message: 'A caller identity token from the gateway is required (Authorization: Bearer)',
          challenge: 'Bearer',
        },
      };
    }
    try {
      const { payload } = await jwtVerify(token, keys, verifyOptions);
      return { caller: { sub: payload.sub!, consumer: String(payload.consumer) } };
    } catch (error) {
      if (error instanceof errors.JOSEError && !JWKS_UNAVAILABLE.has(error.code)) {
        return {
          refusal: { status: 401, code: 'unauthorized', message: `Caller identity token refused: ${error.message}`, challenge: 'Bearer error="invalid_token"' },
        };
      }
      return {
        refusal: {
          status: 503,
          code: 'service_unavailable',
          message: `Caller identity cannot be checked: the gateway's JWKS is unavailable (${(error as Error).message})`,
        },
      };
    }
  };
}

/** Behaves as the interface says, authenticating no API key; with `identity` it checks the gateway's signed token. */
export async function startSampleBackend(options: SampleBackendOptions = {}): Promise<SampleBackend> {
  const pets = new Map((options.pets ?? SAMPLE_PETS).map((pet) => [pet.id, { ...pet }]));
  let nextId = Math.max(0, ...pets.keys()) + 1;
  const received: SampleBackend['received'] = [];
  const verifyCaller = options.identity ? createCallerVerifier(options.identity) : undefined;
  const log = options.log ?? (() => {});

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://backend.invalid');
    const body = req.method === 'POST' ? await readBody(req) : '';
    const verification = verifyCaller ? await verifyCaller(req.headers.authorization) : undefined;
    const caller = verification && 'caller' in verification ? verification.caller : undefined;
    if (options.record) received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, ...(caller ? { caller } : {}) });
    if (verification && 'refusal' in verification) {
      const { status, code, message, challenge } = verification.refusal;
      return send(res, status, { code, message, status }, challenge ? { 'WWW-Authenticate': challenge } : {});
    }

    // HEAD is answered as GET; Node leaves the body out.
    const reading = req.method === 'GET' || req.method === 'HEAD';
    if (url.pathname === '/v1/pets' && reading) {
      const limit = Number(url.searchParams.get('limit') ?? '20');
      const status = url.searchParams.get('status');
      const page = [...pets.values()].filter((pet) => status === null || pet.status === status).slice(0, limit);
      return send(res, 200, page);
    }
    if (url.pathname === '/v1/pets' && req.method === 'POST') {
      let input: Partial<Pet>;
      try {
        input = JSON.parse(body) as Partial<Pet>;
      } catch {
        return fail(res, 400, 'invalid_request', 'Body is not JSON');
      }
      if (typeof input.name !== 'string' || !Number.isInteger(input.categoryId)) {
        return fail(res, 400, 'invalid_request', 'name and categoryId are required');
      }
      if (input.status !== undefined && !STATUSES.has(input.status)) return fail(res, 400, 'invalid_request', 'unknown status');
      const pet: Pet = { id: nextId++, name: input.name, categoryId: input.categoryId!, ...(input.status ? { status: input.status } : {}) };
      pets.set(pet.id, pet);
      log({ msg: 'pet created', petId: pet.id, name: pet.name, ...(caller ? { caller } : {}) });
      return send(res, 201, pet, { Location: `/v1/pets/${pet.id}` });
    }
    const byId = /^\/v1\/pets\/(-?\d+)$/.exec(url.pathname);
    if (byId && reading) {
      const pet = pets.get(Number(byId[1]));
      return pet ? send(res, 200, pet) : fail(res, 404, 'not_found', `No pet with id ${byId[1]}`);
    }
    return fail(res, 404, 'not_found', 'No such resource');
  }

  const server = createServer((req, res) => {
    // Every answer echoes the gateway's X-Request-Id, as backends are asked to (docs/operations.md): the gateway then refuses
    // an answer made for another request instead of relaying it (config `upstream.requestIdEcho`).
    const requestId = req.headers['x-request-id'];
    if (typeof requestId === 'string') res.setHeader('X-Request-Id', requestId);
    handle(req, res).catch(() => fail(res, 500, 'internal_error', 'sample backend failed'));
  });
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1', options.portSetting ?? "the sample backend's port");
  return {
    server,
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
