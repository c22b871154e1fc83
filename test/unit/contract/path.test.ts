// Path safety and matching, compiled from the document's templates.
import { describe, expect, it } from 'vitest';
import { loadContract } from '../../../src/contract/compile-contract.ts';
import { isSafePath } from '../../../src/contract/safe-path.ts';
import { loadConfig } from '../../../src/config/load-config.ts';

const contract = loadContract(loadConfig({}).contractPath);

describe('isSafePath', () => {
  it.each(['/pets', '/pets/12', '/pets/-3', '/store/orders'])('accepts %s', (path) => {
    expect(isSafePath(path)).toBe(true);
  });

  it.each([
    '/pets/..',
    '/pets/.',
    '/../pets',
    '//pets',
    '/pets/%2e%2e',
    '/pets/%2E',
    '/pets%2f1',
    '/pets%2F1',
    '/pets/1%00',
    '/pets/1%5c',
    '/pets\\1',
    '/pets/1\u0000',
    '/pets/%zz',
    '/pets/%',
    'pets',
  ])('refuses %j', (path) => {
    expect(isSafePath(path)).toBe(false);
  });
});

describe('the compiled document', () => {
  it('has the three operations of the interface, and the two the gateway answers itself', () => {
    expect(contract.operations.map((operation) => [operation.id, operation.method, operation.route, operation.answeredBy ?? 'proxied'])).toEqual([
      ['listPets', 'GET', '/v1/pets', 'proxied'],
      ['createPet', 'POST', '/v1/pets', 'proxied'],
      ['getPet', 'GET', '/v1/pets/{petId}', 'proxied'],
      ['getInterfaceDocument', 'GET', '/v1/openapi.json', 'interface-document'],
      ['getApiCatalog', 'GET', '/.well-known/api-catalog', 'api-catalog'],
    ]);
    expect(contract.basePath).toBe('/v1');
  });

  it('matches the catalog on its own route only, outside the base path', () => {
    expect(contract.outsideBasePath.map((operation) => operation.id)).toEqual(['getApiCatalog']);
    expect(contract.matchPath('/.well-known/api-catalog')).toEqual({ kind: 'none' });
  });

  it('marks only getPet deprecated, with its sunset and replacement', () => {
    expect(contract.byId.get('getPet')!.deprecation).toEqual({ sunset: new Date('2030-12-05T00:00:00Z'), replacement: 'listPets' });
    expect(contract.byId.get('listPets')!.deprecation).toBeUndefined();
    expect(contract.byId.get('createPet')!.deprecation).toBeUndefined();
  });

  it('matches a path to the operations served there', () => {
    const match = contract.matchPath('/pets/42');
    expect(match.kind).toBe('path');
    if (match.kind !== 'path') return;
    expect([...match.byMethod.keys()]).toEqual(['GET']);
    expect(match.pathParams).toEqual({ petId: '42' });
    expect(contract.matchPath('/pets/42/toys')).toEqual({ kind: 'none' });
  });
});
