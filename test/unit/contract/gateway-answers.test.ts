// The document's marks for the gateway itself: what x-gateway-answer, a path's own servers and x-internal may say, and what is published.
import { describe, expect, it } from 'vitest';
import { compileContract } from '../../../src/contract/compile-contract.ts';
import { publishedDocument } from '../../../src/contract/published-document.ts';

const base = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  servers: [{ url: 'https://example.com/v1' }],
  paths: {},
};
const root = [{ url: 'https://example.com' }];
const catalog = { operationId: 'getApiCatalog', security: [], 'x-gateway-answer': 'api-catalog' };
const document = { operationId: 'getInterfaceDocument', security: [], 'x-gateway-answer': 'interface-document' };

describe('x-gateway-answer', () => {
  it('compiles the catalog outside the base path, on its route only', () => {
    const contract = compileContract({ ...base, paths: { '/.well-known/api-catalog': { servers: root, get: catalog }, '/openapi.json': { get: document } } });
    expect(contract.operations.map(({ id, route, answeredBy }) => [id, route, answeredBy])).toEqual([
      ['getApiCatalog', '/.well-known/api-catalog', 'api-catalog'],
      ['getInterfaceDocument', '/v1/openapi.json', 'interface-document'],
    ]);
    expect(contract.outsideBasePath.map(({ id }) => id)).toEqual(['getApiCatalog']);
    expect(contract.matchPath('/.well-known/api-catalog')).toEqual({ kind: 'none' });
  });

  it('refuses an operation outside the base path that the gateway would have to forward', () => {
    const paths = { '/status': { servers: root, get: { operationId: 'status' } } };
    expect(() => compileContract({ ...base, paths })).toThrow(
      "interface document: paths./status.get is outside the base path (its path's servers); only an operation the gateway answers itself (x-gateway-answer) may be",
    );
  });

  it('refuses an answer it does not know', () => {
    const paths = { '/x': { get: { ...document, 'x-gateway-answer': 'health' } } };
    expect(() => compileContract({ ...base, paths })).toThrow('paths./x.get.x-gateway-answer must be one of api-catalog, interface-document');
  });

  it('refuses a gateway answer that does not say it needs no key', () => {
    const { security: _security, ...keyed } = document;
    expect(() => compileContract({ ...base, paths: { '/openapi.json': { get: keyed } } })).toThrow(
      'paths./openapi.json.get.security must be [] : the gateway answers interface-document without an API key',
    );
  });

  it('refuses the catalog anywhere but its well-known path', () => {
    expect(() => compileContract({ ...base, paths: { '/catalog': { get: catalog } } })).toThrow(
      'paths./catalog.get: the api-catalog is served at /.well-known/api-catalog (RFC 9727)',
    );
  });

  it('refuses a method other than GET', () => {
    expect(() => compileContract({ ...base, paths: { '/openapi.json': { post: document } } })).toThrow(
      'paths./openapi.json.post.x-gateway-answer: the gateway answers GET (and HEAD with it) only',
    );
  });

  it('refuses two operations giving the same answer', () => {
    const paths = { '/openapi.json': { get: document }, '/spec.json': { get: { ...document, operationId: 'again' } } };
    expect(() => compileContract({ ...base, paths })).toThrow('getInterfaceDocument and again both give x-gateway-answer interface-document');
  });

  it('refuses an internal gateway answer: it is served without a key to everyone', () => {
    expect(() => compileContract({ ...base, paths: { '/openapi.json': { 'x-internal': true, get: document } } })).toThrow(
      'paths./openapi.json.get is answered without a key, so it cannot be x-internal',
    );
  });
});

describe('x-internal', () => {
  it('marks the operations of an internal path item, and internal operations, and no other', () => {
    const paths = {
      '/a': { 'x-internal': true, get: { operationId: 'a' } },
      '/b': { get: { operationId: 'b', 'x-internal': true }, put: { operationId: 'c' } },
    };
    expect(compileContract({ ...base, paths }).operations.map(({ id, internal }) => [id, internal ?? false])).toEqual([
      ['a', true],
      ['b', true],
      ['c', false],
    ]);
  });

  it('refuses a value other than true or false', () => {
    expect(() => compileContract({ ...base, paths: { '/a': { get: { operationId: 'a', 'x-internal': 'yes' } } } })).toThrow(
      'paths./a.get.x-internal must be true or false',
    );
  });
});

describe('publishedDocument', () => {
  const source = {
    ...base,
    paths: {
      '/a': { get: { operationId: 'a', responses: { 200: { $ref: '#/components/responses/Shared' } } } },
      '/b': { 'x-internal': true, get: { operationId: 'b', responses: { 200: { $ref: '#/components/responses/OnlyB' } } } },
      '/c': { get: { operationId: 'c', 'x-internal': true, responses: { 200: { $ref: '#/components/responses/Shared' } } } },
    },
    components: {
      responses: {
        Shared: { description: 's', content: { 'application/json': { schema: { $ref: '#/components/schemas/Kept' } } } },
        OnlyB: { description: 'b', content: { 'application/json': { schema: { $ref: '#/components/schemas/OnlyB' } } } },
      },
      schemas: { Kept: { type: 'string' }, OnlyB: { type: 'integer' }, Unused: { type: 'boolean' } },
    },
  };

  it('leaves out internal path items and operations, paths left empty, and the components only they reach', () => {
    expect(publishedDocument(source)).toEqual({
      ...base,
      paths: { '/a': source.paths['/a'] },
      components: { responses: { Shared: source.components.responses.Shared }, schemas: { Kept: { type: 'string' }, Unused: { type: 'boolean' } } },
    });
  });

  it('does not change the document it is given', () => {
    const before = structuredClone(source);
    publishedDocument(source);
    expect(source).toEqual(before);
  });
});
