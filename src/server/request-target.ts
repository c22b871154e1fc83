// The request line and the headers that frame it, checked before any stage reads them (RFC 9112 §3.2, RFC 9110 §10.1.1).
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import { expectsContinue } from '../http/framing.ts';

/** The scheme and authority of an absolute-form target; the group is the authority. */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)/i;

/**
 * A DNS name, IPv4 address or bracketed IPv6 literal, with an optional port. RFC 3986's reg-name also
 * allows `,;=` and more, which no real host has and which would smuggle elements into the Forwarded
 * and X-Forwarded-Host headers the upstream receives.
 */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Fields a request may carry once. Node keeps the first of each and drops the rest unseen, so two that
 * differ would be read one way here and perhaps another by whatever reads the raw bytes: RFC 9112 §3.2
 * requires 400 for two Host lines; two credentials or two media types are ambiguous the same way.
 * Node's parser already refuses a second Content-Length (HPE_UNEXPECTED_CONTENT_LENGTH, answered by
 * client-error.ts); it is checked here too so that a parser made lenient would not make it pass.
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
 * Absolute-form targets (`GET http://host/v1/pets`) are served as their path, as a server must accept
 * them (RFC 9112 §3.2.2). The target's authority is the request's host there, whatever Host says: it
 * replaces Host, so the X-Forwarded-Host and Forwarded host= the upstream receives name it, and it is
 * checked like any Host (an empty one, or userinfo, is refused). Runs before the app: Express's router
 * keeps the scheme and authority of an absolute URL aside when it starts, so the rewrite must come first.
 */
export function toOriginForm(req: IncomingMessage): void {
  if (req.url === undefined || req.url.startsWith('/')) return;
  const absolute = ABSOLUTE_FORM.exec(req.url);
  if (absolute === null) return;
  req.url = req.url.slice(absolute[0].length) || '/';
  req.headers.host = absolute[1]!;
}

/**
 * What is wrong with the request line and the headers that frame it, or undefined. Any target that is
 * not a path by now (`*`, authority-form) is refused, as is one with a fragment (RFC 9112 §3.2: a
 * fragment is never sent; RFC 9110 §7.1: a server must not take part of the target for it). HTTP/1.1
 * requires Host, once, and Authorization, Content-Type and Content-Length may appear once too. The only
 * expectation the gateway meets is 100-continue, and it answers that itself once the request has passed
 * every check that needs no body (authentication, route, media type, declared size).
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
