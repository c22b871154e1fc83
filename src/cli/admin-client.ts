// The operators' CLIs' remote mode: the key and brownout operations asked of a gateway's admin API (--admin-url), no Redis or pepper needed.
import { readFileSync } from 'node:fs';
import {
  fromApiIssuedKey,
  fromApiKey,
  fromApiRotatedKey,
  type AnsweredIssuedKey,
  type AnsweredKey,
  type AnsweredRotatedKey,
} from '../admin-api/key-representation.ts';
import type { IssuedKey, KeyOperations, KeyPage, NewKey, PageRequest, QuotaChange, RotatedKey } from '../auth/key-admin.ts';
import type { KeyRecord } from '../auth/key-store.ts';
import type { StabilityMarker } from '../config/schema.ts';
import type { DeprecatedCallRow } from '../observability/deprecated-calls.ts';
import type { BrownoutOperations, BrownoutRow, StoppedBrownout } from '../policy/brownout-admin.ts';
import { printable } from './printable.ts';

/** The admin API refused or could not be reached: a runtime error (exit 1) with the API's own message. */
export class AdminApiError extends Error {
  override name = 'AdminApiError';
}

/** The CLIs' options for their remote mode, as commander hands them over. */
export interface AdminOptions {
  adminUrl?: string;
  adminTokenFile?: string;
}

/** `--admin-token-file`'s help, the same in both CLIs. */
export const ADMIN_TOKEN_FILE_HELP = 'a file whose first line is the admin token (with --admin-url)';

/** The client of the gateway's admin API the options name; undefined without --admin-url (the CLI works on Redis). */
export function adminClientFrom({ adminUrl, adminTokenFile }: AdminOptions): AdminClient | undefined {
  return adminUrl === undefined ? undefined : new AdminClient(adminUrl, readAdminToken(adminTokenFile));
}

/** Where the CLI finds the admin token: ADMIN_API_TOKEN, or the first line of --admin-token-file. */
export function readAdminToken(tokenFile: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (tokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(tokenFile, 'utf8');
    } catch (cause) {
      throw new AdminApiError(`--admin-token-file: ${tokenFile} could not be read: ${(cause as Error).message}`, { cause });
    }
    const token = text.split(/\r?\n/).find((line) => line.trim() !== '');
    if (token === undefined) throw new AdminApiError(`--admin-token-file: ${tokenFile} holds no token`);
    return token.trim();
  }
  const token = env.ADMIN_API_TOKEN;
  if (token === undefined || token === '') throw new AdminApiError('--admin-url needs the admin token: set ADMIN_API_TOKEN or pass --admin-token-file');
  return token;
}

/** One gateway's admin API (`http://host:9090`, without /admin), called with the admin token. */
export class AdminClient {
  readonly #base: string;
  readonly #token: string;

  constructor(adminUrl: string, token: string) {
    if (!URL.canParse(adminUrl) || !/^https?:$/.test(new URL(adminUrl).protocol)) {
      throw new AdminApiError(`--admin-url: ${adminUrl} is not an http:// or https:// address`);
    }
    this.#base = adminUrl.replace(/\/+$/, '');
    this.#token = token;
  }

  /** The answer's JSON (undefined for 204); a refusal throws an AdminApiError with the Error body's message. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await this.exchange<T>(method, path, body)).body;
  }

  /** The answer's JSON and the URL of its next page (`Link: <…>; rel="next"`, RFC 8288), if any. */
  async exchange<T>(method: string, path: string, body?: unknown): Promise<{ body: T; next?: string }> {
    const url = `${this.#base}${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.#token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (cause) {
      const reason = (cause as Error).cause instanceof Error ? ((cause as Error).cause as Error).message : (cause as Error).message;
      throw new AdminApiError(`the admin API at ${this.#base} is unreachable (${reason})`, { cause });
    }
    const text = await res.text();
    if (res.ok) {
      const next = this.#nextPath(res.headers.get('link'), url);
      return { body: (text === '' ? undefined : JSON.parse(text)) as T, ...(next === undefined ? {} : { next }) };
    }
    let message = `${res.status} ${res.statusText}`;
    try {
      const error = JSON.parse(text) as { code?: unknown; message?: unknown };
      // Escaped like everything read from the gateway, line by line, so a message of several faults keeps its lines.
      if (typeof error.message === 'string')
        message = `${error.message.split('\n').map(printable).join('\n')} (${res.status} ${printable(String(error.code))})`;
    } catch {
      /* not an Error body: the status says it */
    }
    throw new AdminApiError(`the admin API refused: ${message}`);
  }

  /** The `rel="next"` target, as a path on this gateway; one elsewhere would be sent the admin token, so it is refused. */
  #nextPath(link: string | null, from: string): string | undefined {
    const target = link === null ? undefined : /<([^>]*)>\s*;\s*rel="?next"?/i.exec(link)?.[1];
    if (target === undefined) return undefined;
    const resolved = new URL(target, from);
    if (resolved.origin !== new URL(this.#base).origin)
      throw new AdminApiError(`the admin API's next page is on another origin (${printable(resolved.origin)})`);
    return `${resolved.pathname}${resolved.search}`;
  }
}

const keyPath = (id: string, rest = '') => `/admin/keys/${encodeURIComponent(id)}${rest}`;

/** The key operations over the admin API, printing what the Redis path prints. */
export function remoteKeys(client: AdminClient): KeyOperations {
  const show = async (id: string) => fromApiKey(await client.call<AnsweredKey>('GET', keyPath(id)));
  return {
    async create(input: NewKey): Promise<IssuedKey> {
      const body = {
        consumer: input.consumer,
        // None given: the gateway's own environment, as the Redis path's default is the configured one.
        ...(input.environments.length === 0 ? {} : { environments: input.environments }),
        ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
        ...(input.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: input.rateLimitPerMinute }),
        ...(input.quotaPerDay === undefined ? {} : { quotaPerDay: input.quotaPerDay }),
        ...(input.quotaPerMonth === undefined ? {} : { quotaPerMonth: input.quotaPerMonth }),
        ...(input.optedIn === undefined ? {} : { optIn: input.optedIn }),
      };
      return fromApiIssuedKey(await client.call<AnsweredIssuedKey>('POST', '/admin/keys', body));
    },
    show,
    async list(request: PageRequest = {}): Promise<KeyPage> {
      const query = new URLSearchParams({
        ...(request.cursor === undefined ? {} : { cursor: request.cursor }),
        ...(request.limit === undefined ? {} : { limit: String(request.limit) }),
      }).toString();
      const { body, next } = await client.exchange<AnsweredKey[]>('GET', `/admin/keys${query === '' ? '' : `?${query}`}`);
      const cursor = next === undefined ? null : new URL(next, 'http://gateway').searchParams.get('cursor');
      return { records: body.map(fromApiKey), ...(cursor === null ? {} : { next: cursor }) };
    },
    // Follows the answers' links as they are: the gateway decides what a next page is.
    async *pages(limit?: number): AsyncIterable<readonly KeyRecord[]> {
      let path: string | undefined = `/admin/keys${limit === undefined ? '' : `?limit=${limit}`}`;
      while (path !== undefined) {
        const page: { body: AnsweredKey[]; next?: string } = await client.exchange<AnsweredKey[]>('GET', path);
        yield page.body.map(fromApiKey);
        path = page.next;
      }
    },
    // DELETE answers 204: the record, as the Redis path prints it, is read afterwards.
    async revoke(id: string): Promise<KeyRecord> {
      await client.call('DELETE', keyPath(id));
      return show(id);
    },
    setRateLimit: async (id: string, perMinute: number) => fromApiKey(await client.call<AnsweredKey>('PUT', keyPath(id, '/rate-limit'), { perMinute })),
    setOptIn: async (id: string, markers: readonly StabilityMarker[]) =>
      fromApiKey(await client.call<AnsweredKey>('PUT', keyPath(id, '/opt-in'), { stabilities: [...new Set(markers)] })),
    // JSON keeps null (remove) and drops undefined (leave): the body says what the change says.
    setQuota: async (id: string, change: QuotaChange) => fromApiKey(await client.call<AnsweredKey>('PUT', keyPath(id, '/quota'), change)),
    rotate: async (id: string, overlapSeconds = 0): Promise<RotatedKey> =>
      fromApiRotatedKey(await client.call<AnsweredRotatedKey>('POST', keyPath(id, '/rotate'), { overlapSeconds })),
  };
}

const brownoutPath = (operation: string) => `/admin/brownouts/${encodeURIComponent(operation)}`;

/** The brownout operations over the admin API. */
export function remoteBrownouts(client: AdminClient): BrownoutOperations {
  return {
    list: () => client.call<BrownoutRow[]>('GET', '/admin/brownouts'),
    start: (operation: string, minutes: number) => client.call<BrownoutRow>('POST', brownoutPath(operation), { minutes }),
    // DELETE answers 204, without the scheduled window a stop cancels: only the Redis path can say it.
    async stop(operation: string): Promise<StoppedBrownout> {
      await client.call('DELETE', brownoutPath(operation));
      return { operation };
    },
  };
}

/** The deprecation report's rows, as the gateway reads them from Redis. */
export const remoteReport = (client: AdminClient) => client.call<DeprecatedCallRow[]>('GET', '/admin/deprecations/report');
