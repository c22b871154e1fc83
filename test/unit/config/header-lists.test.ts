// The header allow-lists' extensions: empty by default, lower-case names, and never a name the gateway must not pass.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';

describe('headers', () => {
  it('adds nothing by default', () => {
    expect(loadConfig({}).headers).toEqual({ forwardToUpstream: [], relayToClient: [] });
  });

  it('takes lower-case names', () => {
    const config = loadConfig({}, { headers: { forwardToUpstream: ['x-tenant-hint'], relayToClient: ['x-backend-version', 'set-cookie'] } });
    expect(config.headers).toEqual({ forwardToUpstream: ['x-tenant-hint'], relayToClient: ['x-backend-version', 'set-cookie'] });
  });

  it.each([
    [{ forwardToUpstream: ['X-Tenant'] }, 'headers.forwardToUpstream.0: must be a header field name in lower case'],
    [{ relayToClient: ['x backend'] }, 'headers.relayToClient.0: must be a header field name in lower case'],
  ])('stops on %o naming the key', (headers, named) => {
    expect(() => loadConfig({}, { headers })).toThrow(named);
  });

  it.each([
    'authorization',
    'host',
    'content-length',
    'transfer-encoding',
    'connection',
    'x-forwarded-for',
    'forwarded',
    'x-request-id',
    'x-consumer-id',
    'x-http-method-override',
    'true-client-ip',
  ])('refuses to forward %s', (name) => {
    expect(() => loadConfig({}, { headers: { forwardToUpstream: ['x-fine', name] } })).toThrow(
      `headers.forwardToUpstream.1: ${name} is never forwarded: the gateway sets it itself, or it describes the client's connection or credential, or is a claim about the client or route the gateway does not make`,
    );
  });

  it.each([
    'content-length',
    'transfer-encoding',
    'keep-alive',
    'x-request-id',
    'ratelimit',
    'ratelimit-policy',
    'access-control-allow-origin',
    'access-control-allow-credentials',
  ])('refuses to relay %s', (name) => {
    expect(() => loadConfig({}, { headers: { relayToClient: [name] } })).toThrow(
      `headers.relayToClient.0: ${name} is never relayed from the upstream: it describes the connection or framing, or the gateway states it itself`,
    );
  });

  it('stops on an unknown key', () => {
    expect(() => loadConfig({}, { headers: { forward: [] } })).toThrow(/headers: Unrecognized key: "forward"/);
  });
});
