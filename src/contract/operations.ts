// What an operation of the interface document becomes once compiled: everything the pipeline needs.
import type { ValidateFunction } from 'ajv';
import type { GatewayAnswer } from './gateway-answers.ts';
import type { StabilityMarker } from '../config/schema.ts';
import type { DeclaredResponses } from './declared-responses.ts';

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE' | 'OPTIONS' | 'HEAD' | 'PATCH' | 'TRACE';

export interface ParameterSpec {
  name: string;
  in: 'query' | 'path';
  required: boolean;
  /** Turns the raw text into a value of the schema's type, or says why it cannot. */
  parse: (raw: string) => { ok: true; value: unknown } | { ok: false; reason: string };
  /** Checks the parsed value against the schema's bounds, enum and format. */
  validate: ValidateFunction;
}

export interface RequestBodySpec {
  required: boolean;
  /** Media types the document accepts, lower case, without parameters. */
  mediaTypes: readonly string[];
  validate: ValidateFunction;
}

export interface DeprecationSpec {
  /** When the operation stops being served; absent when no date is set. */
  sunset?: Date;
  /** The operationId clients should move to, when the document names one. */
  replacement?: string;
}

export interface Operation {
  id: string;
  method: HttpMethod;
  /** The path template relative to the base address, e.g. `/pets/{petId}`. */
  pathTemplate: string;
  /** The template below the document's base path, e.g. `/v1/pets/{petId}`: its span's name and `http.route`. */
  route: string;
  parameters: readonly ParameterSpec[];
  /** The query parameters among them, found once at compile time for the per-request check. */
  queryParameters: readonly ParameterSpec[];
  /** The header parameters, lower case: forwarded beside the standard set; their values are not validated. */
  requestHeaders: readonly string[];
  /** The headers each response declares, lower case, by the document's key (`200`, `4XX`, `default`): relayed to the client. */
  responseHeaders: ReadonlyMap<string, readonly string[]>;
  /** What each response promises (status, media type, body, required headers): the backend's answers are checked against it. */
  responses: DeclaredResponses;
  requestBody?: RequestBodySpec;
  /** Present when the document marks the operation deprecated. */
  deprecation?: DeprecationSpec;
  /** `x-stability` of the document; absent: stable. */
  stability?: StabilityMarker;
  /** `x-gateway-answer`: answered by the gateway itself, without a key, never proxied or rate limited (src/discovery). */
  answeredBy?: GatewayAnswer;
  /** `x-internal: true` (the operation or its path item): served, but left out of the published document and the catalog. */
  internal?: true;
}

/** What the path alone says: no operation, or the operations served there by method. */
export type PathMatch = { kind: 'none' } | { kind: 'path'; byMethod: ReadonlyMap<string, Operation>; pathParams: Readonly<Record<string, string>> };

/** The match stage's slice of the request record: the operation and its decoded path parameters. */
export interface RouteSlice {
  operation: Operation;
  pathParams: Readonly<Record<string, string>>;
}

/** For the stages after the route was required; a missing route there is a gateway bug (500). */
export function routeOf(record: { route?: RouteSlice | undefined }): RouteSlice {
  if (!record.route) throw new Error('no route in the request record: a stage runs before createRequireOperation');
  return record.route;
}

/** The deprecated operations that have a sunset date, and that date (the sunset gauge's series). */
export function operationSunsets(operations: readonly Operation[]): Array<{ operation: string; sunset: Date }> {
  return operations.flatMap((operation) => (operation.deprecation?.sunset ? [{ operation: operation.id, sunset: operation.deprecation.sunset }] : []));
}
