// Versions side by side in config: the shipped config serves v1 alone; every further document is checked at start-up.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { loadApiVersions } from '../../../src/contract/api-versions.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));
const V2 = fixture('petstore-v2.openapi.yaml');
const upstreams = { production: 'http://v2.production.example/v2', staging: 'http://v2.staging.example/v2/' };

function versionsOf(overrides: Record<string, unknown>, env: Record<string, string> = {}) {
  return loadApiVersions(loadConfig(env, overrides).sources);
}

describe('the shipped config', () => {
  it("serves v1 alone, from contract and the environment's upstream", () => {
    const config = loadConfig({ GATEWAY_ENVIRONMENT: 'production' });
    expect(config.sources).toEqual([
      {
        key: 'contract',
        documentPath: config.contractPath,
        upstreamBaseUrl: 'http://petstore-backend.petstore-production.svc.cluster.local/v1',
        deprecation: null,
        deprecationKey: 'versionDeprecation',
      },
    ]);
    expect(config.stability).toEqual({ production: { experimental: 'opt-in', beta: 'allow' }, staging: { experimental: 'allow', beta: 'allow' } });
  });
});

describe('versions', () => {
  it("gives each version the upstream of the selected environment; UPSTREAM_URL overrides v1's alone", () => {
    const config = loadConfig({ UPSTREAM_URL: 'http://127.0.0.1:4010/v1' }, { versions: [{ document: V2, upstreams }] });
    expect(config.sources.map((source) => [source.key, source.upstreamBaseUrl])).toEqual([
      ['contract', 'http://127.0.0.1:4010/v1'],
      ['versions.0.document', 'http://v2.staging.example/v2'],
    ]);
  });

  it('compiles each document under its own base path', () => {
    const versions = versionsOf({ versions: [{ document: V2, upstreams }] });
    expect(versions.map(({ contract }) => contract.basePath)).toEqual(['/v1', '/v2']);
    expect(versions[1]!.contract.operations.map((operation) => [operation.id, operation.stability ?? 'stable'])).toEqual([
      ['getAnimal', 'stable'],
      ['listAnimalPhotos', 'experimental'],
      ['listAnimals', 'beta'],
      ['getInterfaceDocumentV2', 'stable'],
    ]);
  });

  it('refuses a second document declaring the api-catalog: the gateway serves one catalog of every version', () => {
    const withCatalog = join(mkdtempSync(join(tmpdir(), 'versions-')), 'petstore-v2-catalog.openapi.yaml');
    const catalog = `  /.well-known/api-catalog:
    servers: [{ url: 'https://petstore.example.com' }]
    get: { operationId: getApiCatalogV2, security: [], x-gateway-answer: api-catalog, responses: { '200': { description: The catalog. } } }
`;
    writeFileSync(withCatalog, readFileSync(V2, 'utf8') + catalog);
    expect(() => versionsOf({ versions: [{ document: withCatalog, upstreams }] })).toThrow(
      'config: versions.0.document: the api-catalog is already declared by contract (petstore.openapi.yaml); the gateway serves one catalog of every version, declared in one document',
    );
  });

  it('refuses an operationId used in two documents', () => {
    expect(() => versionsOf({ versions: [{ document: fixture('petstore-v2-duplicate.openapi.yaml'), upstreams }] })).toThrow(
      'config: versions.0.document: operationId listPets is also in contract (petstore.openapi.yaml); operation ids must be unique across documents (metrics, rate limits and the deprecation report are keyed by them)',
    );
  });

  it('refuses a document file that does not exist', () => {
    expect(() => versionsOf({ versions: [{ document: fixture('missing.openapi.yaml'), upstreams }] })).toThrow(
      /^config: versions\.0\.document: interface document .*missing\.openapi\.yaml could not be read: ENOENT/,
    );
  });

  it("refuses an upstream that does not end with the document's base path", () => {
    const copied = { production: 'http://v2.production.example/v1', staging: 'http://v2.staging.example/v2' };
    expect(() => versionsOf({ versions: [{ document: V2, upstreams: copied }] }, { GATEWAY_ENVIRONMENT: 'production' })).toThrow(
      "config: versions.0.document: its upstream http://v2.production.example/v1 must end with the document's base path /v2",
    );
  });

  it('refuses two documents under the same base path', () => {
    expect(() => versionsOf({ versions: [{ document: 'petstore.openapi.yaml', upstreams }] })).toThrow(
      'config: versions.0.document: base path /v1 overlaps /v1 of contract; each version needs its own, such as /v2',
    );
  });

  it('refuses a successor that is not a configured version', () => {
    expect(() =>
      versionsOf({ versionDeprecation: { deprecatedAt: '2026-11-01T00:00:00Z', successor: '/v3' }, versions: [{ document: V2, upstreams }] }),
    ).toThrow('config: versionDeprecation.successor: /v3 is not the base path of another configured version (served: /v1, /v2)');
  });

  it.each([
    [{ versions: [{ document: V2, upstreams: { production: upstreams.production } }] }, 'versions.0.upstreams.staging'],
    [{ versions: [{ document: V2, upstreams: { ...upstreams, staging: 'ftp://v2.example/' } }] }, 'versions.0.upstreams.staging'],
    [
      { versions: [{ document: V2, upstreams, deprecation: { deprecatedAt: '2026-11-01T00:00:00Z', sunset: '2026-10-01T00:00:00Z' } }] },
      'versions.0.deprecation.sunset: must be after deprecatedAt',
    ],
    [{ versionDeprecation: { deprecatedAt: '2026-11-01T00:00:00Z', successor: 'v2' } }, 'versionDeprecation.successor: must be the base path'],
    [{ stability: { production: { experimental: 'maybe' } } }, 'stability.production.experimental'],
  ])('names the key of a bad value (%#)', (overrides, key) => {
    expect(() => loadConfig({}, overrides)).toThrow(key);
  });
});
