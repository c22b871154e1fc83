// docs/configuration.md against the schema, the loader's environment variables, the reload plan and config/gateway.yaml: none can drift.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ALLOW_NO_PEPPER } from '../../../src/auth/pepper.ts';
import { ENV_KEYS, RUNNING_ENVIRONMENT } from '../../../src/config/load-config.ts';
import { isRestartSetting } from '../../../src/config/reload-plan.ts';
import { configSchema, ENVIRONMENTS } from '../../../src/config/schema.ts';
import { codeSpans, tableRows } from '../../helpers/markdown.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/**
 * Every path the schema accepts, dotted as the reference writes them: a record's key is `*`
 * (`deprecations.*.deprecatedAt`), a list of objects' item `[]` (`versions[].document`). `leaf` tells
 * a setting (a value) from an object that holds settings.
 */
function schemaPaths(schema: z.core.$ZodType, path = ''): Array<{ path: string; leaf: boolean }> {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    return schemaPaths(schema.unwrap(), path);
  }
  if (schema instanceof z.ZodPipe) return schemaPaths(schema.in, path);
  const here = path === '' ? [] : [{ path, leaf: false }];
  if (schema instanceof z.ZodObject) {
    return [...here, ...Object.entries(schema.shape).flatMap(([key, value]) => schemaPaths(value, path === '' ? key : `${path}.${key}`))];
  }
  if (schema instanceof z.ZodRecord) return [...here, ...schemaPaths(schema.valueType, `${path}.*`)];
  if (schema instanceof z.ZodIntersection) {
    const inner = [...schemaPaths(schema.def.left, path), ...schemaPaths(schema.def.right, path)].filter((entry) => entry.path !== path);
    return [...here, ...inner];
  }
  if (schema instanceof z.ZodArray) {
    const items = schemaPaths(schema.element, `${path}[]`);
    // A list of values (redis.sentinels) is one setting; a list of objects (versions) holds settings.
    return items.length === 1 && items[0]!.leaf ? [{ path, leaf: true }] : [...here, ...items];
  }
  return [{ path, leaf: true }];
}

const SCHEMA = schemaPaths(configSchema);
const SETTINGS = SCHEMA.filter((entry) => entry.leaf).map((entry) => entry.path);

const REFERENCE = read('docs/configuration.md');
/** The settings tables' rows; a record key the page names (`<operationId>`) is the schema's `*`. */
const ROWS = tableRows(REFERENCE, ['Setting', 'Variable', 'Default', 'Reload']).map((row) => ({
  setting: codeSpans(row.Setting!)[0]!.replace(/<[^>]+>/g, '*'),
  variables: codeSpans(row.Variable!),
  default: row.Default!,
  reload: row.Reload!,
}));
const DOCUMENTED_SETTINGS = ROWS.map((row) => row.setting);

/** The variables without a setting: the first column of that table. */
const OTHER_VARIABLES = tableRows(REFERENCE, ['Variable', 'Default', 'Meaning'])
  .filter((row) => row.Setting === undefined)
  .flatMap((row) => codeSpans(row.Variable!));
const DOCUMENTED_VARIABLES = [...ROWS.flatMap((row) => row.variables), ...OTHER_VARIABLES];

/** `env.NAME` in a source file: the variables read outside ENV_KEYS's table (GATEWAY_CONFIG, API_KEY_PEPPER). */
const readInSource = (path: string) => [...read(path).matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)].map((match) => match[1]!);
const VARIABLES = [
  ...new Set([...Object.keys(ENV_KEYS), ...readInSource('src/config/load-config.ts'), ...readInSource('src/auth/pepper.ts'), ALLOW_NO_PEPPER]),
];

describe('docs/configuration.md', () => {
  it('documents every setting of the schema', () => {
    expect(SETTINGS.filter((setting) => !DOCUMENTED_SETTINGS.includes(setting))).toEqual([]);
  });

  it('documents no setting the schema lacks, and each once', () => {
    expect(DOCUMENTED_SETTINGS.filter((setting) => !SETTINGS.includes(setting))).toEqual([]);
    expect(DOCUMENTED_SETTINGS).toHaveLength(new Set(DOCUMENTED_SETTINGS).size);
  });

  it('documents every environment variable the gateway reads', () => {
    expect(VARIABLES.filter((variable) => !DOCUMENTED_VARIABLES.includes(variable))).toEqual([]);
  });

  it('documents no environment variable the gateway does not read', () => {
    expect(DOCUMENTED_VARIABLES.filter((variable) => !VARIABLES.includes(variable))).toEqual([]);
  });

  it('names each variable on the row of the setting it sets (each environment row of a setting kept per environment)', () => {
    const documented: Record<string, string[]> = {};
    for (const row of ROWS) for (const variable of row.variables) documented[variable] = [...(documented[variable] ?? []), row.setting];
    const loader = Object.fromEntries(
      Object.entries(ENV_KEYS).map(([variable, path]: [string, readonly string[]]) => [
        variable,
        path.includes(RUNNING_ENVIRONMENT) ? ENVIRONMENTS.map((environment) => path.join('.').replace(RUNNING_ENVIRONMENT, environment)) : [path.join('.')],
      ]),
    );
    expect(documented).toEqual(loader);
  });

  it('gives the schema default of every setting whose default it writes as one value', () => {
    // The least a file must say; versionDeprecation given so that its own defaults (sunset, successor) are filled in.
    const defaults = configSchema.parse({
      environments: { production: { upstream: 'http://p/v1' }, staging: { upstream: 'http://s/v1' } },
      versionDeprecation: { deprecatedAt: '2027-01-01T00:00:00Z' },
    });
    const valueAt = (path: string): unknown => path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], defaults);
    const written = ROWS.filter((row) => /^`[^`]*`$/.test(row.default) && !/[*[]/.test(row.setting));
    expect(written.length).toBeGreaterThan(40);
    for (const row of written) {
      const value = valueAt(row.setting);
      expect(codeSpans(row.default)[0], row.setting).toBe(typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));
    }
  });

  it('says restart exactly for the settings a reload keeps until a restart (src/config/reload-plan.ts)', () => {
    // The list of documents and their upstreams also waits for a restart (reload-plan.ts, DOCUMENT_LIST); their contents do not.
    const documentList = ['contract', 'versions[].document', 'versions[].upstreams.production', 'versions[].upstreams.staging'];
    const restart = (setting: string) => isRestartSetting(setting) || documentList.includes(setting);
    expect(ROWS.filter((row) => row.reload.startsWith('restart') !== restart(row.setting)).map((row) => `${row.setting}: ${row.reload}`)).toEqual([]);
  });
});

describe('config/gateway.yaml', () => {
  it('sets only keys the schema has', () => {
    const paths = new Set(SCHEMA.map((entry) => entry.path));
    const keys = (node: unknown, path: string): string[] => {
      if (Array.isArray(node)) return [path, ...node.flatMap((item) => (typeof item === 'object' && item !== null ? keys(item, `${path}[]`) : []))];
      if (typeof node !== 'object' || node === null) return [path];
      return [path, ...Object.entries(node).flatMap(([key, value]) => keys(value, path === '' ? key : `${path}.${key}`))].filter(Boolean);
    };
    // A record's keys (deprecations.getPet, rateLimit.limits.production.createPet) are the schema's `*` where no key of that name exists.
    const asSchemaPath = (key: string) =>
      key.split('.').reduce((prefix, segment) => {
        const exact = prefix === '' ? segment : `${prefix}.${segment}`;
        return paths.has(exact) || paths.has(exact.replace(/\[\]$/, '')) ? exact : `${prefix}.*${segment.endsWith('[]') ? '[]' : ''}`;
      }, '');
    const fileKeys = keys(parseYaml(read('config/gateway.yaml')), '');
    expect(fileKeys.length).toBeGreaterThan(60);
    expect(fileKeys.filter((key) => !paths.has(asSchemaPath(key)))).toEqual([]);
  });

  it('holds every setting of the schema, so an operator finds each one in the file', () => {
    const text = read('config/gateway.yaml');
    const file = parseYaml(text) as Record<string, unknown>;
    // Left unset on purpose, each shown as a commented example: environment (so that NODE_ENV=production
    // without GATEWAY_ENVIRONMENT stops start-up), upstreamUrl (an override), contractResponses.defaultCovers
    // (unset, it follows each environment's mode).
    const commented = ['environment', 'upstreamUrl', 'contractResponses.defaultCovers'];
    const has = (path: string) => {
      if (commented.includes(path)) return new RegExp(`^\\s*#\\s+${path.split('.').at(-1)}: `, 'm').test(text);
      let node: unknown = file;
      for (const key of path.split('.')) {
        // null: an object setting that is off (versionDeprecation), its shape in the comment above it.
        if (node === null) return true;
        if (typeof node !== 'object' || !(key in node)) return false;
        node = (node as Record<string, unknown>)[key];
      }
      return true;
    };
    // A setting inside a record or a list (deprecations.*.brownouts, versions[].document) is there when its record or list is.
    const container = (setting: string) => setting.replace(/(\.\*|\[\]).*$/, '');
    expect(SETTINGS.filter((setting) => !has(container(setting)))).toEqual([]);
  });
});
