// A malformed interface document stops start-up with a message that says where.
import { describe, expect, it } from 'vitest';
import { compileContract } from '../../../src/contract/compile-contract.ts';

const base = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  servers: [{ url: 'https://example.com/v1' }],
  paths: {},
};

describe('compileContract refusals', () => {
  it('refuses a document that is not OpenAPI 3.1', () => {
    expect(() => compileContract({ ...base, openapi: '3.0.3' })).toThrow('openapi must be a 3.1.x version');
  });

  it('refuses an operation without operationId', () => {
    expect(() => compileContract({ ...base, paths: { '/pets': { get: { responses: {} } } } })).toThrow('paths./pets.get.operationId is required');
  });

  it('refuses a duplicated operationId', () => {
    const paths = { '/a': { get: { operationId: 'x' } }, '/b': { get: { operationId: 'x' } } };
    expect(() => compileContract({ ...base, paths })).toThrow('operationId x is used twice');
  });

  it('refuses a replacement that names no operation', () => {
    const paths = { '/a': { get: { operationId: 'a', deprecated: true, 'x-replacement': 'nothing' } } };
    expect(() => compileContract({ ...base, paths })).toThrow('a x-replacement names unknown operation nothing');
  });

  it('refuses a sunset that is not a date', () => {
    const paths = { '/a': { get: { operationId: 'a', deprecated: true, 'x-sunset': 'soon' } } };
    expect(() => compileContract({ ...base, paths })).toThrow('paths./a.get.x-sunset must be an RFC 3339 date-time');
  });

  it('builds a new operation from the document alone', () => {
    const paths = {
      '/store/orders': {
        get: { operationId: 'listOrders', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 5 } }] },
      },
    };
    const contract = compileContract({ ...base, paths });
    expect(contract.matchPath('/store/orders').kind).toBe('path');
    const [limit] = contract.byId.get('listOrders')!.parameters;
    expect(limit!.validate(6)).toBe(false);
  });
});

describe('x-stability', () => {
  it('compiles experimental and beta, and leaves other operations stable', () => {
    const paths = {
      '/a': { get: { operationId: 'a', 'x-stability': 'experimental' } },
      '/b': { get: { operationId: 'b', 'x-stability': 'beta' } },
      '/c': { get: { operationId: 'c' } },
    };
    expect(compileContract({ ...base, paths }).operations.map((operation) => operation.stability)).toEqual(['experimental', 'beta', undefined]);
  });

  it('refuses another marker', () => {
    const paths = { '/a': { get: { operationId: 'a', 'x-stability': 'alpha' } } };
    expect(() => compileContract({ ...base, paths })).toThrow(
      'paths./a.get.x-stability must be one of experimental, beta (leave it out for a stable operation)',
    );
  });
});
