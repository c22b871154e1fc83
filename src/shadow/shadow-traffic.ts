// Shadow traffic: a sample of production's requests sent again to staging once production has answered, on a pool of its own,
// within its own cap, timeout and memory bound; staging's answer checked against the document and compared with production's.
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { GatewayConfig } from '../config/schema.ts';
import { checkAnswerHead, parseAnswerBody } from '../contract/check-answer.ts';
import { UNDECLARED_MEMBER } from '../contract/declared-pointer.ts';
import type { Operation } from '../contract/operations.ts';
import type { JsonBodyParse } from '../contract/strict-json.ts';
import type { IdentityCaller } from '../identity/identity-signer.ts';
import { checkBody } from '../proxy/answer-check.ts';
import type { UpstreamTlsOptions } from '../proxy/upstream-tls.ts';
import type { ShadowedRequest, ShadowSampler, ShadowTicket } from '../proxy/create-proxy.ts';
import type { Clock } from '../time/clock.ts';
import { compareAnswers, type CompareBounds, type ReadAnswer } from './compare-answers.ts';
import { type NoiseBook, splitNoise } from './noise-book.ts';
import type { DifferenceKind, ShadowDifference, ShadowOutcomeSink, ShadowResult } from './shadow-outcome.ts';

export type ShadowSettings = GatewayConfig['shadow'];

/** The metrics a shadow reports into (petstore_gateway_shadow_*). */
export interface ShadowCounters {
  compared(operation: string, result: ShadowResult): void;
  differed(operation: string, kind: DifferenceKind): void;
}

export interface ShadowTrafficOptions {
  settings: ShadowSettings;
  /** Every operation served: the ids `shadow.sample` and `shadow.ignore` name are checked against them. */
  operations: readonly Operation[];
  /** Production's identity (the noise check's second production request) and staging's (the shadow request). */
  identity: {
    headersFor(caller: IdentityCaller): Promise<Readonly<Record<string, string>>>;
    stagingHeadersFor(caller: IdentityCaller): Promise<Readonly<Record<string, string>>>;
  };
  /**
   * What connections to an https:// target are made with: staging's (upstreamTls.staging, readBackendTls) for the shadow
   * request, the running environment's for production's second answer. Absent: Node's defaults; verification is never off.
   */
  tls: { staging?: UpstreamTlsOptions; production?: UpstreamTlsOptions };
  sink: ShadowOutcomeSink;
  /** What this replica learnt about noise: shared by every pipeline generation. */
  noise: NoiseBook;
  counters: ShadowCounters;
  clock: Clock;
  /** Told an error a shadow met that is the gateway's own (a bug), not staging's. */
  onError?: (error: unknown) => void;
  random?: () => number;
}

export interface ShadowTraffic {
  /** The sampler of one document's proxy; undefined when none of its operations is shadowed (the proxy then pays nothing). */
  samplerFor(operations: readonly Operation[], productionBaseUrl: string, stagingBaseUrl: string): ShadowSampler | undefined;
  /** Shadows under way now (from production's answer to the comparison's end). */
  readonly inFlight: number;
  /** Answer bytes held for comparisons now. */
  readonly heldBytes: number;
  /** Closes the shadow pool: shadows still under way end as staging_error. */
  close(): Promise<void>;
}

/** Values a comparison visits at most (both answers): about a millisecond of CPU, whatever the bodies hold. */
export const MAX_COMPARED_NODES = 50_000;

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/** Where a version's requests go: the origin of its pool, and the base path its paths are below. */
interface Target {
  origin: string;
  basePath: string;
}

/** Why a shadow request brought no answer to compare. */
type NoAnswer = 'error' | 'over_bound';

class ShadowSettingError extends Error {
  override name = 'ShadowSettingError';
}

/** The share of an operation's requests shadowed: its own, else `default` for a safe operation; an unsafe one only by name. */
function shareOf(settings: ShadowSettings, operation: Operation): number {
  const own = Object.hasOwn(settings.sample, operation.id) && operation.id !== 'default' ? settings.sample[operation.id] : undefined;
  if (own !== undefined) return own;
  return SAFE_METHODS.has(operation.method) ? settings.sample.default : 0;
}

/**
 * The member name of a pointer no operation of that id declares in a response, if any: the comparison writes such a member as
 * `*`, so the pointer would never match. `/status` and `/headers/<name>` name the answer's head, not its body.
 */
function undeclaredSegment(pointer: string, operations: readonly Operation[]): string | undefined {
  if (pointer === '' || pointer === '/status' || pointer.startsWith('/headers/')) return undefined;
  for (const segment of pointer.slice(1).split('/')) {
    const name = segment.replaceAll('~1', '/').replaceAll('~0', '~');
    if (name !== UNDECLARED_MEMBER && !operations.some(({ responses }) => responses.memberNames.has(name))) return name;
  }
  return undefined;
}

function checkNames(settings: ShadowSettings, operations: readonly Operation[]): void {
  const known = new Set(operations.map(({ id }) => id));
  for (const id of Object.keys(settings.sample)) {
    if (id !== 'default' && !known.has(id)) throw new ShadowSettingError(`shadow.sample.${id}: no operation of the served documents has this operationId`);
  }
  for (const id of Object.keys(settings.ignore)) {
    if (!known.has(id)) throw new ShadowSettingError(`shadow.ignore.${id}: no operation of the served documents has this operationId`);
  }
  for (const [id, pointers] of Object.entries(settings.ignore)) {
    // Every served document's operation of that id: the noise and the ignore list are kept by id.
    const named = operations.filter((operation) => operation.id === id);
    for (const pointer of pointers) {
      const name = undeclaredSegment(pointer, named);
      if (name === undefined) continue;
      // The name is the operator's, from the configuration, not a body's: it may be written back to them.
      throw new ShadowSettingError(
        `shadow.ignore.${id}: ${pointer} names the member "${name}", which no response of ${id} declares; differences there are reported as * (the report holds the document's names only): write * in its place`,
      );
    }
  }
}

/**
 * undici's connector with one environment's TLS (plain net.connect for an http:// origin). The configured servername is put
 * on each connection, as the proxy's connector does: undici would otherwise name the server from the request's host.
 */
function connectorWith(tls: UpstreamTlsOptions | undefined, timeoutMs: number): buildConnector.connector {
  // Verification asked for last, whatever `tls` holds: NODE_TLS_REJECT_UNAUTHORIZED=0 would otherwise switch it off.
  const connect = buildConnector({ ...tls, timeout: timeoutMs, rejectUnauthorized: true });
  const servername = tls?.servername;
  return servername === undefined ? connect : (connection, callback) => connect({ ...connection, servername }, callback);
}

/** The shadow pool and its bounds for one pipeline generation; a reload makes the next one with the settings then in force. */
export function createShadowTraffic(options: ShadowTrafficOptions): ShadowTraffic {
  const { settings, sink, counters, clock, noise } = options;
  checkNames(settings, options.operations);
  const random = options.random ?? Math.random;
  const bounds: CompareBounds = { maxBodyBytes: settings.maxBodyBytes, maxNodes: MAX_COMPARED_NODES };
  // Its own connections, at most one per shadow in flight per environment: production's pool never waits behind a stalled
  // staging. One pool per environment, as each speaks TLS with its own environment's authorities and client certificate.
  const poolWith = (tls: UpstreamTlsOptions | undefined) =>
    new Agent({
      connections: settings.maxInFlight,
      connect: connectorWith(tls, settings.timeoutMs),
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
    });
  const agents = { staging: poolWith(options.tls.staging), production: poolWith(options.tls.production) };
  let inFlight = 0;
  let held = 0;

  const take = (bytes: number): boolean => {
    if (held + bytes > settings.maxBytes) return false;
    held += bytes;
    return true;
  };
  const give = (bytes: number): void => {
    held -= bytes;
  };

  function finish(operation: string, result: ShadowResult, differences: readonly ShadowDifference[] = [], noisy: readonly ShadowDifference[] = []): void {
    counters.compared(operation, result);
    for (const { kind } of differences) counters.differed(operation, kind);
    sink.record({ operation, result, differences, noise: noisy, at: clock.now() });
  }

  /** One answer read whole within the bounds, its bytes counted against the memory bound until `release`. */
  async function fetchAnswer(
    agent: Agent,
    origin: string,
    path: string,
    request: ShadowedRequest,
    headers: Record<string, string>,
    signal: AbortSignal,
    hold: (bytes: number) => boolean,
  ): Promise<ReadAnswer | NoAnswer> {
    let answer: Dispatcher.ResponseData;
    try {
      answer = await agent.request({ origin, path, method: request.method, headers, body: request.body ?? null, signal });
    } catch {
      return 'error';
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > settings.maxBodyBytes || !hold(chunk.length)) {
          answer.body.destroy();
          return 'over_bound';
        }
        chunks.push(chunk);
      }
    } catch {
      return 'error';
    }
    return { status: answer.statusCode, headers: answer.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
  }

  /**
   * Staging's answer against the document, as a checked production answer is: whether it keeps it, and the parse of its body
   * the check made (undefined when it made none: no body to check, a media type without a schema, a coding not decoded).
   */
  function keepsContract(
    operation: Operation,
    method: string,
    staging: ReadAnswer,
    statedByGateway: ReadonlySet<string>,
  ): { keeps: boolean; parsed?: JsonBodyParse } {
    const headOnly = method === 'HEAD';
    const contentType = staging.headers['content-type'];
    const head = checkAnswerHead(
      operation.responses,
      staging.status,
      (name) => staging.headers[name] !== undefined || statedByGateway.has(name),
      Array.isArray(contentType) ? contentType[0] : contentType,
      !headOnly && staging.status !== 204 && staging.status !== 304,
    );
    if (head.violation !== undefined) return { keeps: false };
    if (head.body === undefined) return { keeps: true };
    const check = { enforce: false, operation, headOnly, maxBodyBytes: settings.maxBodyBytes, defaultCoversErrorsOnly: false };
    let parsed: JsonBodyParse | undefined;
    const parseOnce = (body: Uint8Array | readonly Uint8Array[]) => {
      parsed = parseAnswerBody(body);
      return parsed;
    };
    const verdict = checkBody(check, head.body, staging.status, staging.headers['content-encoding'], staging.body, parseOnce);
    return parsed === undefined ? { keeps: verdict.result !== 'violation' } : { keeps: verdict.result !== 'violation', parsed };
  }

  function upstreamHeaders(request: ShadowedRequest, identity: Readonly<Record<string, string>>, shadowMark: boolean): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      // Host is the target's (undici sets it from the origin).
      if (value === undefined || name === 'host') continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    Object.assign(headers, identity);
    if (shadowMark) headers['x-gateway-shadow'] = '1';
    return headers;
  }

  async function compare(
    request: ShadowedRequest,
    production: ReadAnswer,
    targets: { production: Target; staging: Target },
    release: () => void,
  ): Promise<void> {
    const { operation } = request;
    let heldHere = 0;
    const hold = (bytes: number) => {
      if (!take(bytes)) return false;
      heldHere += bytes;
      return true;
    };
    try {
      const signal = AbortSignal.timeout(settings.timeoutMs);
      const stagingHeaders = upstreamHeaders(request, await options.identity.stagingHeadersFor(request.caller), true);
      const askAgain = request.method === 'GET' && settings.noiseSample > 0 && random() < settings.noiseSample;
      const [staging, again] = await Promise.all([
        fetchAnswer(agents.staging, targets.staging.origin, targets.staging.basePath + request.path, request, stagingHeaders, signal, hold),
        askAgain
          ? options.identity
              .headersFor(request.caller)
              .then((identity) =>
                fetchAnswer(
                  agents.production,
                  targets.production.origin,
                  targets.production.basePath + request.path,
                  request,
                  upstreamHeaders(request, identity, false),
                  signal,
                  hold,
                ),
              )
          : undefined,
      ]);
      // Noise first: what differs between production's own two answers is not counted against staging, from this comparison on.
      if (again !== undefined && typeof again !== 'string') {
        const sightings = compareAnswers(operation, production, again, bounds).differences;
        noise.learn(operation.id, sightings);
        const at = clock.now();
        for (const { pointer, kind } of sightings) sink.noteNoise({ operation: operation.id, pointer, kind, at });
      }
      if (staging === 'over_bound') return finish(operation.id, 'skipped');
      if (staging === 'error') return finish(operation.id, 'staging_error');
      const stated = new Set(request.answeredWith.filter((name) => production.headers[name] === undefined));
      const contract = keepsContract(operation, request.method, staging, stated);
      if (!contract.keeps) return finish(operation.id, 'staging_off_contract');
      // Staging's body parsed once: the comparison reads the check's parse.
      const checked = contract.parsed === undefined ? staging : { ...staging, parsed: contract.parsed };
      const { differences } = compareAnswers(operation, production, checked, bounds);
      const split = splitNoise(differences, noise.noise(operation.id), settings.ignore[operation.id] ?? []);
      finish(operation.id, split.differences.length > 0 ? 'differ' : 'match', split.differences, split.noise);
    } finally {
      give(heldHere);
      release();
    }
  }

  return {
    samplerFor(operations, productionBaseUrl, stagingBaseUrl) {
      const shares = new Map<Operation, number>();
      for (const operation of operations) {
        const share = shareOf(settings, operation);
        if (share > 0 && operation.answeredBy === undefined) shares.set(operation, share);
      }
      if (shares.size === 0) return undefined;
      const productionTarget = new URL(productionBaseUrl);
      const stagingTarget = new URL(stagingBaseUrl);
      const targets = {
        production: { origin: productionTarget.origin, basePath: productionTarget.pathname.replace(/\/$/, '') },
        staging: { origin: stagingTarget.origin, basePath: stagingTarget.pathname.replace(/\/$/, '') },
      };
      return {
        draw(operation) {
          const share = shares.get(operation);
          if (share === undefined || (share < 1 && random() >= share)) return undefined;
          // At the cap no copy of production's answer is even made: a stalled staging costs production nothing.
          if (inFlight >= settings.maxInFlight) {
            finish(operation.id, 'skipped');
            return undefined;
          }
          inFlight++;
          return ticketFor(operation, targets);
        },
      };
    },
    get inFlight() {
      return inFlight;
    },
    get heldBytes() {
      return held;
    },
    close: () => Promise.all([agents.staging.destroy(), agents.production.destroy()]).then(() => undefined),
  };

  function ticketFor(operation: Operation, targets: { production: Target; staging: Target }): ShadowTicket {
    let status = 0;
    let headers: ReadAnswer['headers'] = {};
    let chunks: Buffer[] | undefined = [];
    let size = 0;
    let whole = false;
    let settled = false;
    const release = () => {
      if (settled) return;
      settled = true;
      give(size);
      chunks = undefined;
      inFlight--;
    };
    const skip = () => {
      if (settled) return;
      release();
      finish(operation.id, 'skipped');
    };
    return {
      head(answerStatus, answerHeaders) {
        status = answerStatus;
        headers = answerHeaders;
      },
      chunk(bytes) {
        if (chunks === undefined) return false;
        if (size + bytes.length > settings.maxBodyBytes || !take(bytes.length)) {
          // Over a bound: nothing is compared; what was held goes at once.
          give(size);
          size = 0;
          chunks = undefined;
          return false;
        }
        size += bytes.length;
        chunks.push(bytes);
        return true;
      },
      end() {
        whole = chunks !== undefined;
      },
      drop: skip,
      send(request) {
        if (settled) return;
        if (!whole || chunks === undefined) return skip();
        const production: ReadAnswer = { status, headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
        compare(request, production, targets, release).catch((error: unknown) => {
          options.onError?.(error);
          finish(operation.id, 'staging_error');
        });
      },
    };
  }
}
