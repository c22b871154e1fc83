// Each operation's header policy, compiled from its document and the config: which names cross, each way, for each status.
import { describe, expect, it } from 'vitest';
import { compileContract, loadContract } from '../../../src/contract/compile-contract.ts';
import { CORS_RESPONSE } from '../../../src/http/header-names.ts';
import { compileHeaderPolicy, STANDARD_FORWARDED, STANDARD_RELAYED, TRACE_CONTEXT, type HeaderListExtensions } from '../../../src/proxy/header-policy.ts';

const NO_EXTENSIONS: HeaderListExtensions = { forwardToUpstream: [], relayToClient: [] };

/** A document with one operation, `op`, as given; its responses may use components.responses and components.headers. */
function documentWith(operation: Record<string, unknown>, components: Record<string, unknown> = {}) {
  return {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    servers: [{ url: 'https://example.com/v1' }],
    paths: { '/things': { get: { operationId: 'op', ...operation } } },
    components,
  };
}

function policyOf(operation: Record<string, unknown>, components?: Record<string, unknown>, extensions = NO_EXTENSIONS) {
  const contract = compileContract(documentWith(operation, components));
  return compileHeaderPolicy(contract.byId.get('op')!, extensions);
}

const sorted = (names: Iterable<string>) => [...names].sort();

describe('what the upstream may receive', () => {
  it('is the standard set when the document declares no header parameter', () => {
    expect(sorted(policyOf({}).forwarded)).toEqual(sorted(STANDARD_FORWARDED));
  });

  it('never copies the trace context, which the gateway states itself, even when the config lists it', () => {
    const policy = policyOf({}, {}, { forwardToUpstream: [...TRACE_CONTEXT], relayToClient: [] });
    expect(TRACE_CONTEXT.filter((name) => policy.forwarded.has(name))).toEqual([]);
  });

  it("adds the operation's header parameters, lower case", () => {
    const policy = policyOf({ parameters: [{ name: 'X-Tenant', in: 'header', schema: { type: 'string' } }] });
    expect(policy.forwarded.has('x-tenant')).toBe(true);
  });

  it('adds headers.forwardToUpstream', () => {
    const policy = policyOf({}, {}, { forwardToUpstream: ['x-tenant-hint'], relayToClient: [] });
    expect(policy.forwarded.has('x-tenant-hint')).toBe(true);
  });

  it('ignores a header parameter named Authorization, as OpenAPI says', () => {
    const policy = policyOf({ parameters: [{ name: 'Authorization', in: 'header', schema: { type: 'string' } }] });
    expect(policy.forwarded.has('authorization')).toBe(false);
  });

  it.each(['Host', 'X-Forwarded-For', 'Content-Length', 'X-Consumer-Id', 'Connection'])(
    'refuses a header parameter named %s, which the gateway never forwards',
    (name) => {
      expect(() => policyOf({ parameters: [{ name, in: 'header', schema: { type: 'string' } }] })).toThrow(
        `interface document: paths./things.get.parameters[0].name ${name} is a header the gateway sets itself or never forwards`,
      );
    },
  );

  it('refuses a cookie parameter', () => {
    expect(() => policyOf({ parameters: [{ name: 'sid', in: 'cookie', schema: { type: 'string' } }] })).toThrow(
      'paths./things.get.parameters[0].in must be query, path or header',
    );
  });
});

describe('what the client may see of an answer', () => {
  const responses = {
    '200': { description: 'ok', headers: { 'X-Page': { schema: { type: 'string' } }, 'X-Request-Id': { $ref: '#/components/headers/RequestId' } } },
    '201': { $ref: '#/components/responses/Created' },
    '4XX': { description: 'client errors', headers: { 'X-Problem': { schema: { type: 'string' } } } },
    default: { description: 'other', headers: { 'X-Trace': { schema: { type: 'string' } } } },
  };
  const components = {
    headers: { RequestId: { schema: { type: 'string' } } },
    responses: { Created: { description: 'created', headers: { Location: { schema: { type: 'string' } } } } },
  };
  const relay = policyOf({ responses }, components).relay;
  const beyondStandard = (status: number) => sorted([...relay.relayedFor(status)].filter((name) => !STANDARD_RELAYED.includes(name)));

  it.each([
    [200, ['x-page']],
    [201, ['location']],
    [404, ['x-problem']],
    [429, ['x-problem']],
    [500, ['x-trace']],
    [304, ['x-trace']],
  ])('for %i: the standard set and %j', (status, declared) => {
    expect(beyondStandard(status)).toEqual(declared);
  });

  it('never includes a field the gateway states itself, though the document declares it', () => {
    expect(relay.relayedFor(200).has('x-request-id')).toBe(false);
  });

  it("never includes the backend's CORS fields, though the document declares them: the gateway owns CORS", () => {
    const declared = Object.fromEntries(CORS_RESPONSE.map((name) => [name, { schema: { type: 'string' } }]));
    const policy = policyOf({ responses: { '200': { description: 'ok', headers: declared } } });
    expect(CORS_RESPONSE.filter((name) => policy.relay.relayedFor(200).has(name))).toEqual([]);
  });

  it('is the standard set alone where the document has no default', () => {
    expect(sorted(policyOf({ responses: { '200': { description: 'ok' } } }).relay.relayedFor(503))).toEqual(sorted(STANDARD_RELAYED));
  });

  it('adds headers.relayToClient for every status', () => {
    const extended = policyOf({ responses }, components, { forwardToUpstream: [], relayToClient: ['x-backend-version'] }).relay;
    expect([200, 201, 404, 500].map((status) => extended.relayedFor(status).has('x-backend-version'))).toEqual([true, true, true, true]);
  });

  it('carries no secret: a request that sends an identity token adds its own', () => {
    expect(relay.secret).toBeUndefined();
  });

  it('refuses a response key that is not a status, a range or default', () => {
    expect(() => policyOf({ responses: { '2xx': { description: 'ok' } } })).toThrow(
      'interface document: paths./things.get.responses.2xx must be a status code, a range such as 4XX, or default',
    );
  });

  it('refuses a reference to nothing', () => {
    expect(() => policyOf({ responses: { '200': { $ref: '#/components/responses/Missing' } } })).toThrow(
      'interface document: paths./things.get.responses.200.$ref #/components/responses/Missing names nothing in the document',
    );
  });

  it('refuses a cycle of references', () => {
    const cyclic = { responses: { A: { $ref: '#/components/responses/B' }, B: { $ref: '#/components/responses/A' } } };
    expect(() => policyOf({ responses: { '200': { $ref: '#/components/responses/A' } } }, cyclic)).toThrow(
      'paths./things.get.responses.200.$ref is part of a cycle',
    );
  });
});

describe("the pet store's document", () => {
  it("relays createPet's Location with 201 only", () => {
    const contract = loadContract(new URL('../../../config/petstore.openapi.yaml', import.meta.url).pathname);
    const relayed = (id: string, status: number) => compileHeaderPolicy(contract.byId.get(id)!, NO_EXTENSIONS).relay.relayedFor(status).has('location');
    expect([relayed('createPet', 201), relayed('createPet', 400), relayed('listPets', 200), relayed('getPet', 200)]).toEqual([true, false, false, false]);
  });
});
