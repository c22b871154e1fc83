// The request line and the headers that frame it, checked before any stage reads them (RFC 9112 §3.2, RFC 9110 §10.1.1).
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import { expectsContinue } from '../http/framing.ts';

/** The scheme and authority of an absolute-form target; the group is the authority. */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)/i;

/** A DNS name, IPv4 or bracketed IPv6, optional port: RFC 3986's `,;=` would smuggle elements into Forwarded and X-Forwarded-Host. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Fields a request may carry once: Node keeps the first and drops the rest unseen, so two that differ could be read another way
 * by whatever reads the raw bytes (RFC 9112 §3.2: 400 for two Host lines). Content-Length too, in case the parser is made lenient.
 */
const SINGLETONS: ReadonlyMap<string, string> = new Map([
  ['host', 'Host'],
  ['authorization', 'Authorization'],
  ['content-type', 'Content-Type'],
  ['content-length', 'Content-Length'],
]);
/** The singletons' name lengths: most raw names are rejected on their length, without lower-casing them. */
const SINGLETON_LENGTHS = new Set([...SINGLETONS.keys()].map((name) => name.length));

/** The first singleton field the raw head repeats, by its usual spelling; undefined when none is. */
function repeatedSingleton(rawHeaders: readonly string[]): string | undefined {
  let seen: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!;
    if (!SINGLETON_LENGTHS.has(raw.length)) continue;
    const name = raw.toLowerCase();
    if (!SINGLETONS.has(name)) continue;
    if (seen?.includes(name)) return SINGLETONS.get(name);
    seen ??= [];
    seen.push(name);
  }
  return undefined;
}

/**
 * Absolute-form targets (`GET http://host/v1/pets`) are served as their path (RFC 9112 §3.2.2); their authority replaces Host and
 * is checked like one. Runs before the app: Express's router keeps an absolute URL's authority aside when it starts.
 */
export function toOriginForm(req: IncomingMessage): void {
  if (req.url === undefined || req.url.startsWith('/')) return;
  const absolute = ABSOLUTE_FORM.exec(req.url);
  if (absolute === null) return;
  req.url = req.url.slice(absolute[0].length) || '/';
  req.headers.host = absolute[1]!;
}

/**
 * What is wrong with the request line and the headers that frame it, or undefined: a target that is not a path, a fragment
 * (RFC 9112 §3.2, RFC 9110 §7.1), a repeated singleton, a missing Host, an expectation other than 100-continue.
 */
export function targetRefusal(req: IncomingMessage & { url: string }): GatewayError | undefined {
  if (!req.url.startsWith('/')) return new GatewayError('invalid_request', 'The request target must be a path');
  if (req.url.includes('#')) return new GatewayError('invalid_request', 'The request target must not carry a fragment (#)');
  const repeated = repeatedSingleton(req.rawHeaders);
  if (repeated !== undefined) return new GatewayError('invalid_request', `The request carries more than one ${repeated} header`);
  const host = req.headers.host;
  if (host === undefined ? req.httpVersion === '1.1' : !HOST.test(host)) {
    return new GatewayError('invalid_request', 'An HTTP/1.1 request must carry a Host header naming a host and optional port');
  }
  const expect = req.headers.expect;
  if (expect !== undefined && req.httpVersion === '1.1' && !expectsContinue(req)) {
    return new GatewayError('expectation_failed', `The expectation '${expect}' cannot be met; only 100-continue is supported`);
  }
  return undefined;
}

/** The public pipeline's first stage: targetRefusal's refusal, thrown to the error handler. */
export function createRequestTarget(): RequestHandler {
  return function checkRequestTarget(req, _res, next) {
    const refusal = targetRefusal(req);
    if (refusal !== undefined) throw refusal;
    next();
  };
}
