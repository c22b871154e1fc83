// The shape of the gateway's configuration: every key typed, described and defaulted.
import { z } from 'zod';
import { originProblem } from '../http/cors-vocabulary.ts';
import { NEVER_FORWARDED, NOT_RELAYABLE_BY_CONFIG } from '../http/header-names.ts';

export const ENVIRONMENTS = ['production', 'staging'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];
/** What `x-stability` may say of an operation; an operation without it is stable. */
export const STABILITY_MARKERS = ['experimental', 'beta'] as const;
export type StabilityMarker = (typeof STABILITY_MARKERS)[number];
/** What a marker allows: every caller, no caller, or only API keys whose record opted in to it. */
export type StabilityAccess = 'allow' | 'deny' | 'opt-in';

// Said in words: zod's own "expected number, received NaN" does not tell an operator what PORT=80a should be.
const PORT_NUMBER = 'must be an integer port number (0 to 65535)';
const port = z.coerce.number({ error: PORT_NUMBER }).int({ error: PORT_NUMBER }).min(0, { error: PORT_NUMBER }).max(65535, { error: PORT_NUMBER });
const MILLISECONDS = 'must be a whole number of milliseconds, at least 1';
const positiveMs = z.coerce.number({ error: MILLISECONDS }).int({ error: MILLISECONDS }).positive({ error: MILLISECONDS });
/** `host:port`, as in REDIS_SENTINELS=10.0.0.1:26379,10.0.0.2:26379. */
const redisNode = z
  .string()
  .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')
  .transform((value) => {
    const separator = value.lastIndexOf(':');
    return { host: value.slice(0, separator), port: Number(value.slice(separator + 1)) };
  });
const baseUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL ending in /v1, such as http://petstore-backend.internal/v1' })
  // zod runs the refinement after a failed url check too: a value that is no URL is that check's to report (`new URL` would throw).
  .refine((value) => !URL.canParse(value) || new URL(value).pathname.replace(/\/$/, '').endsWith('/v1'), 'must end with the path segment /v1');

/** A header field name (a token, RFC 9110 §5.1), lower case as Node reports them. */
const headerName = z.string().regex(/^[!#$%&'*+\-.^_`|~0-9a-z]+$/, 'must be a header field name in lower case');
const headerList = (refused: ReadonlySet<string>, why: string) =>
  z.array(headerName.refine((name) => !refused.has(name), { error: (issue) => `${String(issue.input)} ${why}` })).default([]);

/** A share of requests, 0 to 1. */
const share = z.coerce.number({ error: 'must be a number from 0 to 1' }).min(0).max(1);

/** What is done with the backend's answers in one environment; `sample`: the share `report` checks (0 to 1). */
const contractResponseChecks = (mode: 'off' | 'report' | 'enforce', sample: number) =>
  z
    .object({
      mode: z.enum(['off', 'report', 'enforce']).default(mode),
      sample: z.coerce.number({ error: 'must be a number from 0 to 1' }).min(0).max(1).default(sample),
    })
    .strict()
    .prefault({});
export type ContractResponseMode = 'off' | 'report' | 'enforce';

const instant = z.iso.datetime({ offset: true }).transform((value) => new Date(value));
const stabilityAccess = z.enum(['allow', 'deny', 'opt-in']);

/** A whole version deprecated: every operation announces it, and from `sunset` on every one is refused (410 gone). */
const versionDeprecation = z
  .object({
    /** The Deprecation header of every operation of the version. */
    deprecatedAt: instant,
    /** From this instant every operation of the version is refused; null: no date yet. */
    sunset: instant.nullable().default(null),
    /** The base path of the version clients should move to (another configured version, e.g. /v2): Link rel="successor-version". */
    successor: z
      .string()
      .regex(/^\/[^\s]*$/, 'must be the base path of another configured version, such as /v2')
      .nullable()
      .default(null),
  })
  .strict()
  .refine((deprecation) => deprecation.sunset === null || deprecation.sunset > deprecation.deprecatedAt, {
    message: 'must be after deprecatedAt',
    path: ['sunset'],
  });
export type VersionDeprecation = z.output<typeof versionDeprecation>;

const stabilityPolicy = (experimental: StabilityAccess, beta: StabilityAccess) =>
  z
    .object({ experimental: stabilityAccess.default(experimental), beta: stabilityAccess.default(beta) })
    .strict()
    .prefault({});

/** Origins as browsers send them (scheme://host[:port]), or `*` alone: every origin. */
const allowedOrigins = z
  .array(z.string().refine((value) => value === '*' || originProblem(value) === undefined, { error: (issue) => originProblem(String(issue.input)) }))
  .refine((origins) => !origins.includes('*') || origins.length === 1, "'*' allows every origin: list it alone or not at all")
  .default([]);

const pemFiles = {
  /** The certificate, followed by any intermediates the peer needs to build its chain. */
  certFile: z.string().min(1).nullable().default(null),
  /** The certificate's private key (PKCS#8 or the traditional RSA/EC PEM), unencrypted. */
  keyFile: z.string().min(1).nullable().default(null),
};
/**
 * Certificate and key: both or neither. Told on the half that is set, so the fault is blamed on where it came from
 * (TLS_CERT_FILE set alone is the environment's, not the file's), naming both ways of setting the pair.
 */
const bothOrNeither = (variables: { cert: string; key: string }) => (pair: { certFile: string | null; keyFile: string | null }, context: z.RefinementCtx) => {
  if ((pair.certFile === null) === (pair.keyFile === null)) return;
  const [set, missing] = pair.certFile === null ? ['keyFile', 'certFile'] : ['certFile', 'keyFile'];
  context.addIssue({
    code: 'custom',
    path: [set],
    message: `set without ${missing}: set certFile and keyFile together (${variables.cert} and ${variables.key}): a certificate needs its key`,
  });
};

/** A certificate and its private key, PEM files: both or neither. */
const certificatePair = (variables: { cert: string; key: string }) => z.object(pemFiles).strict().superRefine(bothOrNeither(variables)).prefault({});
export type CertificatePairFiles = z.output<ReturnType<typeof certificatePair>>;

export const TLS_VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;

/** How the gateway's connections to one environment's backends are secured (https:// upstreams only); verification is never off. */
const upstreamTls = z
  .object({
    /** PEM bundle of the authorities the backends' certificates must chain to; null: Node's default store. */
    caFile: z.string().min(1).nullable().default(null),
    /** `replace`: only caFile's authorities are trusted (a private CA pinned); `add`: caFile's and Node's default store. */
    caMode: z.enum(['replace', 'add']).default('replace'),
    /** The client certificate and key of mutual TLS; none: no client certificate is offered. */
    ...pemFiles,
    /** Sent as SNI and checked against the backend's certificate instead of the URL's host; null: the URL's host. */
    servername: z.string().trim().min(1).nullable().default(null),
    minVersion: z.enum(TLS_VERSIONS).default('TLSv1.2'),
  })
  .strict()
  .superRefine(bothOrNeither({ cert: 'UPSTREAM_TLS_CERT_FILE', key: 'UPSTREAM_TLS_KEY_FILE' }))
  .prefault({});
export type UpstreamTlsSettings = z.output<typeof upstreamTls>;

export const configSchema = z
  .object({
    /** The interface document, relative to the config file. */
    contract: z.string().min(1).default('petstore.openapi.yaml'),
    /** Which backend this deployment fronts. */
    environment: z.enum(ENVIRONMENTS).default('staging'),
    environments: z
      .object({
        production: z.object({ upstream: baseUrl }),
        staging: z.object({ upstream: baseUrl }),
      })
      .strict(),
    /** Overrides the selected environment's upstream base address. */
    upstreamUrl: baseUrl.optional(),
    /** The document of `contract` deprecated as a whole (same shape as `versions[].deprecation`); null: it is current. */
    versionDeprecation: versionDeprecation.nullable().default(null),
    /** Further documents served beside `contract`, each under its servers[0].url's base path; operation ids unique across all. */
    versions: z
      .array(
        z
          .object({
            /** The interface document, relative to the config file. */
            document: z.string().min(1),
            /** Base address of this version's backend per environment. */
            upstreams: z.object({ production: z.url({ protocol: /^https?$/ }), staging: z.url({ protocol: /^https?$/ }) }).strict(),
            deprecation: versionDeprecation.optional(),
          })
          .strict(),
      )
      .default([]),
    /** What operations marked `x-stability: experimental | beta` may do, per environment: allow, deny, or opt-in (keys that opted in). */
    stability: z
      .object({ production: stabilityPolicy('opt-in', 'allow'), staging: stabilityPolicy('allow', 'allow') })
      .strict()
      .prefault({}),
    listen: z
      .object({
        /** The public listener's address: every interface by default. */
        host: z.string().trim().min(1).default('0.0.0.0'),
        port: port.default(8080),
        /** The admin listener's address; loopback unless configured (ADMIN_HOST): /metrics and the deprecation report are for the kubelet's probes and Prometheus, not every network the host is on. */
        adminHost: z.string().trim().min(1).default('127.0.0.1'),
        adminPort: port.default(9090),
        keepAliveTimeoutMs: positiveMs.default(5000),
        headersTimeoutMs: positiveMs.default(10_000),
        requestTimeoutMs: positiveMs.default(30_000),
        /** Open client connections per process; at the cap the least progressed one (idle, slow head, stalled answer) is closed for the newcomer. */
        maxConnections: z.coerce.number().int().positive().default(10_000),
        /** Requests in flight per process; above it, 503 at once (load shedding). */
        maxInFlight: z.coerce.number().int().positive().default(1024),
        /** Pipelined requests one connection may have waiting behind the one being served; one waiting stops reading, more closes the connection. */
        maxQueuedPerConnection: z.coerce.number().int().positive().default(16),
        /** An answer whose client takes none of its bytes for this long closes its connection (both listeners; nginx's send_timeout). */
        sendTimeoutMs: positiveMs.default(30_000),
        /** Admin listener connections; at the cap the least progressed one makes way, so a flood cannot lock out probes. */
        adminMaxConnections: z.coerce.number().int().positive().default(256),
        /** An admin client must send all its request headers within this (else 408 and the connection closes). */
        adminHeadersTimeoutMs: positiveMs.default(5000),
        /** An admin client must send its whole request within this (else 408 and the connection closes). */
        adminRequestTimeoutMs: positiveMs.default(10_000),
        /** Idle keep-alive connections to the admin listener close after this long. */
        adminKeepAliveTimeoutMs: positiveMs.default(5000),
        /** HTTPS on the public listener (TLS 1.2 and 1.3, docs/configuration.md); none: plain HTTP behind a TLS-terminating ingress. */
        tls: certificatePair({ cert: 'TLS_CERT_FILE', key: 'TLS_KEY_FILE' }),
        /** HTTPS on the admin listener; none: plain HTTP (it listens on loopback by default). */
        adminTls: certificatePair({ cert: 'ADMIN_TLS_CERT_FILE', key: 'ADMIN_TLS_KEY_FILE' }),
      })
      .strict()
      // Node refuses to create a server whose header timeout outlasts its request timeout: named here instead.
      .refine((listen) => listen.adminHeadersTimeoutMs <= listen.adminRequestTimeoutMs, {
        message: 'must be at most listen.adminRequestTimeoutMs',
        path: ['adminHeadersTimeoutMs'],
      })
      .prefault({}),
    upstream: z
      .object({
        timeoutMs: positiveMs.default(10_000),
        connectTimeoutMs: positiveMs.default(2000),
        totalTimeoutMs: positiveMs.default(30_000),
        maxSockets: z.coerce.number().int().positive().default(256),
        /**
         * Whether an answer must carry the X-Request-Id the gateway sent with its request: `off` (not looked at); `auto` (one that
         * carries another id is refused, and once the backend has echoed an id, one without it too); `required` (one without it is
         * refused from the first). Refused answers are 502 upstream_answer_mismatch, their connection closed.
         */
        requestIdEcho: z.enum(['off', 'auto', 'required']).default('auto'),
        /**
         * Offer HTTP/2 to an https:// backend (ALPN, undici's allowH2): one that chooses it answers each request on a stream of its
         * own, so an answer cannot be read as another request's. HTTP/1.1 stays the answer to a backend that does not choose h2;
         * no effect on an http:// backend (no h2c).
         */
        http2: z.union([z.boolean(), z.stringbool()]).default(false),
        circuitBreaker: z
          .object({
            /** Consecutive failed exchanges that open the circuit (then 503 upstream_unavailable at once). */
            failureThreshold: z.coerce.number().int().positive().default(5),
            /** How long the circuit stays open before one trial request is let through. */
            openMs: positiveMs.default(5000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    /** TLS to the backends, per environment: the authorities trusted, the client certificate of mutual TLS, the name checked. */
    upstreamTls: z.object({ production: upstreamTls, staging: upstreamTls }).strict().prefault({}),
    /** The certificate and key files in use are re-read this often; changed bytes run a reload, as SIGHUP does (0: not watched). */
    certificates: z
      .object({ watchIntervalMs: z.coerce.number({ error: MILLISECONDS }).int({ error: MILLISECONDS }).min(0).default(10_000) })
      .strict()
      .prefault({}),
    /** Additions to the headers the gateway lets through (docs/reference.md, "Proxying"); everything not allowed is dropped. */
    headers: z
      .object({
        /** Client headers forwarded to the upstream besides the standard set, trace context and the document's header parameters. */
        forwardToUpstream: headerList(
          NEVER_FORWARDED,
          "is never forwarded: the gateway sets it itself, or it describes the client's connection or credential, or is a claim about the client or route the gateway does not make",
        ),
        /** Upstream headers relayed to the client besides the standard set and the ones the document declares for the answer's status. */
        relayToClient: headerList(
          NOT_RELAYABLE_BY_CONFIG,
          'is never relayed from the upstream: it describes the connection or framing, or the gateway states it itself',
        ),
      })
      .strict()
      .prefault({}),
    /** Browser pages on other origins allowed to call the API (CORS), per environment; empty: CORS off. */
    cors: z
      .object({
        allowedOrigins: z.object({ production: allowedOrigins, staging: allowedOrigins }).strict().prefault({}),
      })
      .strict()
      .prefault({}),
    /**
     * The backend's answers checked against the document (src/proxy/answer-check.ts), per environment: `off`; `report`
     * (a sampled share counted and logged, the answer untouched); `enforce` (every answer held until checked; a violating one
     * becomes 502 upstream_contract_violation). Bodies over `maxBodyBytes` are relayed unchecked and counted as such.
     */
    contractResponses: z
      .object({
        production: contractResponseChecks('report', 0.02),
        staging: contractResponseChecks('enforce', 1),
        maxBodyBytes: z.coerce.number().int().positive().max(16_777_216).default(262_144),
        /**
         * What a response keyed `default` covers: `all` statuses (OpenAPI's reading), or `errors` only (4xx, 5xx), so that an
         * undeclared 2xx, 3xx or 304 is `undeclared_status`. Unset: `errors` where the mode is `enforce`, `all` under `report`.
         */
        defaultCovers: z.enum(['all', 'errors']).optional(),
      })
      .strict()
      .prefault({}),
    requests: z
      .object({ maxBodyBytes: z.coerce.number().int().positive().default(65_536) })
      .strict()
      .prefault({}),
    deprecations: z
      .record(
        z.string(),
        z
          .object({
            deprecatedAt: z.iso.datetime({ offset: true }).transform((value) => new Date(value)),
            /** A page about the deprecation: Link rel="deprecation". */
            documentationUrl: z.url().nullable().default(null),
            /** A page about the sunset (what is removed, when, how to migrate): Link rel="sunset". */
            sunsetDocumentationUrl: z.url().nullable().default(null),
            /** Scheduled brownouts: the operation is refused (410 brownout) from each start until its end. */
            brownouts: z
              .array(
                z
                  .object({
                    start: z.iso.datetime({ offset: true }).transform((value) => new Date(value)),
                    end: z.iso.datetime({ offset: true }).transform((value) => new Date(value)),
                  })
                  .strict()
                  .refine((window) => window.end > window.start, { message: 'must be after start', path: ['end'] }),
              )
              .default([]),
          })
          .strict(),
      )
      .default({}),
    /** Who still calls deprecated operations: counted in each process, added up in Redis in batches. */
    deprecationReport: z
      .object({
        /** How often each process writes its counts to Redis; a crash loses at most this long's calls. */
        flushIntervalMs: positiveMs.default(5000),
      })
      .strict()
      .prefault({}),
    /** Each consumer's daily calls per operation (admitted, refused by quota or rate limit): counted in each process, added up in Redis in batches. */
    usage: z
      .object({
        /** Days of usage kept in Redis; older days expire. */
        retentionDays: z.coerce.number().int().positive().max(3660).default(400),
        /** How often each process writes its usage counts to Redis; a crash loses at most this long's counts. */
        flushIntervalMs: positiveMs.default(5000),
      })
      .strict()
      .prefault({}),
    shutdown: z
      .object({
        gracePeriodMs: positiveMs.default(20_000),
        drainDelayMs: z.coerce.number().int().min(0).default(5000),
      })
      .strict()
      .prefault({}),
    /** The container's CPU request and memory limit (Downward API), for the saturation metrics; null: the gauges have no series. */
    resources: z
      .object({
        cpuRequestMillicores: z.coerce.number().int().positive().nullable().default(null),
        memoryLimitBytes: z.coerce.number().int().positive().nullable().default(null),
      })
      .strict()
      .prefault({}),
    redis: z
      .object({
        /** redis://[:password@]host:port/db, or rediss:// for TLS. */
        url: z
          .string()
          .refine((value) => /^rediss?:\/\//.test(value) && URL.canParse(value), 'must be a redis:// or rediss:// URL')
          .default('redis://127.0.0.1:6379'),
        /** Sentinel mode: the sentinels (host:port) that know the primary named `sentinelName`. */
        sentinels: z.array(redisNode).default([]),
        sentinelName: z.string().min(1).default('mymaster'),
        /** Cluster mode: some nodes (host:port) of the cluster. */
        clusterNodes: z.array(redisNode).default([]),
        /** Password of the data nodes in Sentinel and Cluster mode; standalone takes it from the URL. */
        password: z.string().min(1).nullable().default(null),
        /** Prefix of every Redis key and channel the gateway uses, so it can share a Redis. */
        keyPrefix: z.string().min(1).default('petstore-gateway:'),
        /** A Redis command that takes longer fails (auth then answers 503). */
        commandTimeoutMs: positiveMs.default(500),
        connectTimeoutMs: positiveMs.default(2000),
      })
      .strict()
      .refine((redis) => redis.sentinels.length === 0 || redis.clusterNodes.length === 0, 'set either sentinels or clusterNodes, not both')
      .prefault({}),
    auth: z
      .object({
        /** File holding the pepper for HMAC-SHA-256 key hashes; without one keys are stored as SHA-256. */
        pepperFile: z.string().min(1).nullable().default(null),
        cache: z
          .object({
            maxEntries: z.coerce.number().int().positive().default(10_000),
            /** Most unknown keys remembered, held apart from found keys so a flood of bogus keys cannot evict valid ones. */
            maxNegativeEntries: z.coerce.number().int().positive().default(1000),
            ttlMs: positiveMs.default(30_000),
            negativeTtlMs: positiveMs.default(5000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    /** The admin API (/admin/ on the admin listener): key, brownout and report management over HTTP; off while tokenFile is null. */
    adminApi: z
      .object({
        /** File of admin tokens, one a line, each at least 32 characters (several during a rotation); null: the admin API answers 404. */
        tokenFile: z.string().min(1).nullable().default(null),
        /** Failed authentications one source address may make per minute; past it, 429 until the minute ends. */
        maxFailedAuthPerMinute: z.coerce.number().int().positive().default(10),
      })
      .strict()
      .prefault({}),
    rateLimit: z
      .object({
        /** Fixed window in which each key's requests to each operation are counted. */
        windowMs: positiveMs.default(60_000),
        /** Rate-limit store (Redis) unreachable: `allow` lets requests through (auth still fails closed), `deny` answers 503. Exact mode only. */
        onStoreError: z.enum(['allow', 'deny']).default('allow'),
        /**
         * `exact`: every hit counted in Redis before its request goes on, exact across replicas. `local-first`: counted in
         * process, synchronised every `syncMs` (N replicas may pass up to (N − 1) × rate per replica × 2 × syncMs over).
         */
        mode: z.enum(['exact', 'local-first']).default('exact'),
        /** local-first: how often local counts are synchronised with Redis. */
        syncMs: positiveMs.default(250),
        /** Also write X-RateLimit-Limit, -Remaining and -Reset, for clients written for other gateways (the RateLimit fields are always written). */
        legacyHeaders: z.union([z.boolean(), z.stringbool()]).default(false),
        /** Requests per window per key and operation, by environment; `default` for operations not listed. */
        limits: z
          .object({
            production: z.record(z.string(), z.coerce.number().int().positive()).and(z.object({ default: z.coerce.number().int().positive() })),
            staging: z.record(z.string(), z.coerce.number().int().positive()).and(z.object({ default: z.coerce.number().int().positive() })),
          })
          .prefault({ production: { default: 600, createPet: 60 }, staging: { default: 300, createPet: 30 } }),
      })
      .strict()
      // Synchronising less than four times a window lets replicas miss each other's counts for most of it.
      .refine((rateLimit) => rateLimit.mode !== 'local-first' || rateLimit.syncMs * 4 <= rateLimit.windowMs, {
        message: 'must be at most a quarter of rateLimit.windowMs in local-first mode',
        path: ['syncMs'],
      })
      // Local-first never asks Redis on the request path, so there is no failure to deny on: say so rather than ignore it.
      .refine((rateLimit) => rateLimit.mode !== 'local-first' || rateLimit.onStoreError === 'allow', {
        message: 'deny applies to the exact mode only; local-first counts in process while Redis is away',
        path: ['onStoreError'],
      })
      .prefault({}),
    logging: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
      .strict()
      .prefault({}),
    /** Signed caller identity sent to the backend (Authorization: Bearer <JWT>); off while keyFile is null. */
    upstreamIdentity: z
      .object({
        /** PKCS#8 PEM private key, Ed25519 (EdDSA) or P-256 (ES256), that signs the tokens; null: nothing is signed. */
        keyFile: z.string().min(1).nullable().default(null),
        /** Rotation: the key that signed before keyFile, still published in the JWKS until previousKeyUntil. */
        previousKeyFile: z.string().min(1).nullable().default(null),
        /** End of the rotation overlap: from this instant the previous key leaves the JWKS. */
        previousKeyUntil: z.iso
          .datetime({ offset: true })
          .transform((value) => new Date(value))
          .nullable()
          .default(null),
        /** `iss` of every token; backends check it. */
        issuer: z.string().min(1).default('petstore-gateway'),
        /** `aud` of every token; backends check it. */
        audience: z.string().min(1).default('petstore-backend'),
        /** Token lifetime (exp - iat); a token is reused for two thirds of it. At most 300 (5 minutes). */
        ttlSeconds: z.coerce.number().int().min(30).max(300).default(120),
        /** Tokens kept for reuse in each process, one per API key and operation. */
        maxCachedTokens: z.coerce.number().int().positive().default(10_000),
        /** Also send X-Consumer-Id and X-Consumer-Name, unsigned, for backends on a trusted network. */
        consumerHeaders: z.boolean().default(false),
      })
      .strict()
      .refine((identity) => (identity.previousKeyFile === null) === (identity.previousKeyUntil === null), {
        message: 'set previousKeyFile and previousKeyUntil together (the overlap needs an end)',
        path: ['previousKeyUntil'],
      })
      .refine((identity) => identity.previousKeyFile === null || identity.keyFile !== null, {
        message: 'a previous key needs a current key (keyFile) to rotate to',
        path: ['keyFile'],
      })
      .prefault({}),
    /**
     * Shadow traffic (src/shadow): a sample of production's requests sent again to the staging backend once production has
     * answered, staging's answer compared with production's and counted; the client's answer is never touched. Reloadable.
     */
    shadow: z
      .object({
        /**
         * The share (0 to 1) of each operation's requests shadowed, by operationId; `default` for every safe operation (GET,
         * HEAD) not listed. An unsafe operation (createPet) is shadowed only when listed by name here.
         */
        sample: z
          .record(z.string(), share)
          .and(z.object({ default: share.default(0) }))
          .prefault({}),
        /** The staging backend the first document's requests are shadowed to; null: `environments.staging.upstream` (versions: their staging upstream). */
        upstreamUrl: baseUrl.nullable().default(null),
        /** Shadow requests in flight at most, per process (the shadow pool's connections too); past it a shadow is skipped. */
        maxInFlight: z.coerce.number().int().positive().default(32),
        /** A shadow exchange (staging's, or production's second answer) must be whole within this, else staging_error. */
        timeoutMs: positiveMs.default(5000),
        /** Bytes of answers held for comparisons at once, per process; a shadow that would go past it is skipped. */
        maxBytes: z.coerce.number().int().positive().default(8_388_608),
        /** One answer's body compared at most (decoded); a larger one makes its shadow skipped. */
        maxBodyBytes: z.coerce.number().int().positive().max(16_777_216).default(262_144),
        /** The share of shadowed GETs for which production is asked a second time: pointers differing between its two answers are noise. */
        noiseSample: share.default(0.05),
        /** Pointers never counted as differences, by operationId (`/items/*\/updatedAt`, `/headers/etag`). */
        ignore: z.record(z.string(), z.array(z.string().regex(/^(\/[^/]*)+$/, 'must be a JSON pointer such as /items/*/updatedAt'))).default({}),
        /** The difference report (GET /admin/shadow/report, npm run shadow -- report): counted in each process, added up in Redis by the hour. */
        report: z
          .object({
            /** Days each hour of the report is kept in Redis after it ends; older hours expire, and no query may span more. */
            retentionDays: z.coerce.number().int().positive().max(400).default(30),
            /** How often each process writes its comparisons' counts to Redis; a crash loses at most this long's counts. */
            flushIntervalMs: positiveMs.default(5000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** One interface document to serve, resolved for the selected environment. */
export interface VersionSource {
  /** The config key that names the document (`contract`, `versions.1.document`), for start-up errors. */
  key: string;
  /** Absolute path of the document. */
  documentPath: string;
  /** The upstream base address in force for this version. */
  upstreamBaseUrl: string;
  deprecation: VersionDeprecation | null;
  /** The config key of `deprecation` (`versionDeprecation`, `versions.1.deprecation`). */
  deprecationKey: string;
}

export type GatewayConfig = z.output<typeof configSchema> & {
  /** The upstream base address in force: the override, or the environment's. */
  readonly upstreamBaseUrl: string;
  /** Absolute path of the interface document. */
  readonly contractPath: string;
  /** Every document served: `contract` first, then `versions` in order. */
  readonly sources: readonly VersionSource[];
};
