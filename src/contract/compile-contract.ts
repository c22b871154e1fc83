// Compiles the OpenAPI document into the operations, matcher and validators the pipeline runs on.
import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { STABILITY_MARKERS, type StabilityMarker } from '../config/schema.ts';
import { compileResponseHeaders, createRefResolver, headerParameterName } from './declared-headers.ts';
import { compileDeclaredResponses } from './declared-responses.ts';
import type { HttpMethod, Operation, ParameterSpec, RequestBodySpec } from './operations.ts';
import { createParameterParser } from './parameters.ts';
import { createPathMatcher } from './path-matcher.ts';
import { checkOneAnswerEach, compileAnswerMarks } from './gateway-answers.ts';
import { createSchemaValidator, rewriteRefs } from './schema-validator.ts';

const METHODS: readonly HttpMethod[] = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'];

export interface Contract {
  title: string;
  /** The path the interface is served under, from the first server's address (e.g. `/v1`). */
  basePath: string;
  version: string;
  /** Every operation, those outside the base path included. */
  operations: readonly Operation[];
  /** Operations by operationId. */
  byId: ReadonlyMap<string, Operation>;
  /** Matches a path below the base path to the operations under it. */
  matchPath: ReturnType<typeof createPathMatcher>;
  /** Operations a path-level `servers` puts outside the base path (the api-catalog at the host's root): matched on `route`. */
  outsideBasePath: readonly Operation[];
  /** The document as parsed, before compilation: what the gateway publishes of it (src/contract/published-document.ts). */
  document: Readonly<Record<string, unknown>>;
}

type Json = Record<string, unknown>;

function asObject(value: unknown, where: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`interface document: ${where} must be an object`);
  }
  return value as Json;
}

/**
 * The last document compiled from each file, with the text it was compiled from. A reload reads every document again; one whose
 * text has not changed keeps its compiled contract, so its validators stay the functions V8 has optimised (Ajv compiles new
 * ones, which start unoptimised and take thousands of requests to be fast again) and the reload compiles nothing. A Contract
 * is never changed once compiled, so the pipelines before and after the reload can share it.
 */
const lastCompiled = new Map<string, { text: string; contract: Contract }>();
/**
 * Files whose last compiled document is kept: far more than a configuration serves (its versions and the admin document), so
 * only files no longer configured are forgotten, the least recently read first, instead of being held for the process's life.
 */
export const REMEMBERED_DOCUMENTS = 16;

export function loadContract(file: string): Contract {
  let text: string;
  let document: unknown;
  try {
    text = readFileSync(file, 'utf8');
    const last = lastCompiled.get(file);
    if (last !== undefined && last.text === text) {
      // Read again: now the most recently read (a Map iterates in insertion order).
      lastCompiled.delete(file);
      lastCompiled.set(file, last);
      return last.contract;
    }
    document = parseYaml(text);
  } catch (cause) {
    throw new Error(`interface document ${file} could not be read: ${(cause as Error).message}`, { cause });
  }
  const contract = compileContract(document);
  lastCompiled.delete(file);
  lastCompiled.set(file, { text, contract });
  if (lastCompiled.size > REMEMBERED_DOCUMENTS) lastCompiled.delete(lastCompiled.keys().next().value!);
  return contract;
}

/** Every malformed part of the document stops start-up with a message that says where it is. */
export function compileContract(document: unknown): Contract {
  const root = asObject(document, 'the document');
  if (typeof root.openapi !== 'string' || !root.openapi.startsWith('3.1')) {
    throw new Error('interface document: openapi must be a 3.1.x version');
  }
  const info = asObject(root.info, 'info');
  const schemas = asObject(asObject(root.components ?? {}, 'components').schemas ?? {}, 'components.schemas');
  const ajv = createSchemaValidator(schemas);
  const resolve = (schema: unknown): unknown => {
    const ref = (schema as { $ref?: unknown } | undefined)?.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      return schemas[ref.slice('#/components/schemas/'.length)];
    }
    return schema;
  };

  const resolveRef = createRefResolver(root);
  // Most responses name the same few schemas (Error above all): each is compiled once.
  const responseValidators = new Map<string, ValidateFunction>();
  const compileResponseSchema = (schema: unknown): ValidateFunction => {
    const key = JSON.stringify(schema);
    let validate = responseValidators.get(key);
    if (validate === undefined) {
      validate = ajv.compile(rewriteRefs(schema) as object);
      responseValidators.set(key, validate);
    }
    return validate;
  };

  const basePath = basePathOf(root.servers);
  const operations: Operation[] = [];
  const outside = new Set<Operation>();
  for (const [pathTemplate, pathItemValue] of Object.entries(asObject(root.paths, 'paths'))) {
    if (!pathTemplate.startsWith('/')) throw new Error(`interface document: path ${pathTemplate} must start with /`);
    const pathItem = asObject(pathItemValue, `paths.${pathTemplate}`);
    const shared = (pathItem.parameters ?? []) as unknown[];
    // OpenAPI 3.1 lets a path item name its own servers: the path is then served under theirs, not the document's.
    const pathBase = pathItem.servers === undefined ? basePath : basePathOf(pathItem.servers, `paths.${pathTemplate}.servers`, { hostRoot: true });
    const place = { route: pathBase + pathTemplate, underBasePath: pathBase === basePath };
    for (const method of METHODS) {
      const raw = pathItem[method.toLowerCase()];
      if (raw === undefined) continue;
      const where = `paths.${pathTemplate}.${method.toLowerCase()}`;
      const operation = asObject(raw, where);
      if (typeof operation.operationId !== 'string') throw new Error(`interface document: ${where}.operationId is required`);
      const parameters: ParameterSpec[] = [];
      const requestHeaders: string[] = [];
      for (const [index, value] of [...shared, ...((operation.parameters ?? []) as unknown[])].entries()) {
        const at = `${where}.parameters[${index}]`;
        // A parameter may be a reference to components.parameters, as the admin document's key id is.
        const parameter = resolveRef(value, at);
        if (parameter.in !== 'header') {
          parameters.push(compileParameter(parameter, at));
          continue;
        }
        if (typeof parameter.name !== 'string') throw new Error(`interface document: ${at}.name is required`);
        const name = headerParameterName(parameter.name, at);
        if (name !== undefined) requestHeaders.push(name);
      }
      const compiled: Operation = {
        id: operation.operationId,
        method,
        pathTemplate,
        route: place.route,
        parameters,
        queryParameters: parameters.filter((parameter) => parameter.in === 'query'),
        requestHeaders,
        responseHeaders: compileResponseHeaders(operation.responses, `${where}.responses`, resolveRef),
        responses: compileDeclaredResponses(operation.responses, `${where}.responses`, resolveRef, compileResponseSchema),
        ...(operation.requestBody === undefined
          ? {}
          : { requestBody: compileRequestBody(asObject(operation.requestBody, `${where}.requestBody`), `${where}.requestBody`) }),
        ...(operation.deprecated === true ? { deprecation: compileDeprecation(operation, where) } : {}),
        ...(operation['x-stability'] === undefined ? {} : { stability: compileStability(operation['x-stability'], where) }),
        ...compileAnswerMarks(operation, pathItem, method, place, where),
      };
      operations.push(compiled);
      if (!place.underBasePath) outside.add(compiled);
    }
  }

  function compileParameter(parameter: Json, where: string): ParameterSpec {
    if (typeof parameter.name !== 'string') throw new Error(`interface document: ${where}.name is required`);
    if (parameter.in !== 'query' && parameter.in !== 'path') {
      throw new Error(`interface document: ${where}.in must be query, path or header (the gateway handles no other kind)`);
    }
    const schema = parameter.schema ?? {};
    return {
      name: parameter.name,
      in: parameter.in,
      required: parameter.in === 'path' || parameter.required === true,
      parse: createParameterParser(resolve(schema)),
      validate: ajv.compile(rewriteRefs(schema) as object),
    };
  }

  function compileRequestBody(body: Json, where: string): RequestBodySpec {
    const content = asObject(body.content, `${where}.content`);
    const mediaTypes = Object.keys(content).map((type) => type.toLowerCase());
    const jsonType = mediaTypes.find((type) => type === 'application/json' || type.endsWith('+json'));
    if (!jsonType) throw new Error(`interface document: ${where} must accept a JSON media type`);
    const schema = asObject(content[Object.keys(content)[mediaTypes.indexOf(jsonType)]!], `${where}.content`).schema ?? {};
    return { required: body.required === true, mediaTypes, validate: ajv.compile(rewriteRefs(schema) as object) };
  }

  const byId = new Map<string, Operation>();
  for (const operation of operations) {
    if (byId.has(operation.id)) throw new Error(`interface document: operationId ${operation.id} is used twice`);
    byId.set(operation.id, operation);
  }
  checkOneAnswerEach(operations);
  for (const operation of operations) {
    const replacement = operation.deprecation?.replacement;
    if (replacement !== undefined && !byId.has(replacement)) {
      throw new Error(`interface document: ${operation.id} x-replacement names unknown operation ${replacement}`);
    }
  }

  return {
    title: String(info.title),
    basePath,
    version: String(info.version),
    operations,
    byId,
    matchPath: createPathMatcher(operations.filter((operation) => !outside.has(operation))),
    outsideBasePath: [...outside],
    document: root,
  };
}

function compileDeprecation(operation: Json, where: string): NonNullable<Operation['deprecation']> {
  const deprecation: NonNullable<Operation['deprecation']> = {};
  if (operation['x-sunset'] !== undefined) {
    const sunset = new Date(String(operation['x-sunset']));
    if (Number.isNaN(sunset.getTime())) throw new Error(`interface document: ${where}.x-sunset must be an RFC 3339 date-time`);
    deprecation.sunset = sunset;
  }
  if (operation['x-replacement'] !== undefined) deprecation.replacement = String(operation['x-replacement']);
  return deprecation;
}

function compileStability(value: unknown, where: string): StabilityMarker {
  if (!(STABILITY_MARKERS as readonly unknown[]).includes(value)) {
    throw new Error(`interface document: ${where}.x-stability must be one of ${STABILITY_MARKERS.join(', ')} (leave it out for a stable operation)`);
  }
  return value as StabilityMarker;
}

/** The path of the first server's address; `hostRoot`: the host's root (empty) is allowed, as for a path-level servers. */
function basePathOf(servers: unknown, where = 'servers', { hostRoot = false } = {}): string {
  const first = Array.isArray(servers) ? (servers[0] as { url?: unknown } | undefined) : undefined;
  if (typeof first?.url !== 'string') throw new Error(`interface document: ${where}[0].url is required (it carries the version path)`);
  const path = new URL(first.url, 'http://base.invalid').pathname.replace(/\/$/, '');
  if (!path.startsWith('/') && !(hostRoot && path === '')) throw new Error(`interface document: ${where}[0].url must have a path such as /v1`);
  return path;
}
