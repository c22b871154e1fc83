// The document's marks for the gateway itself: operations it answers (`x-gateway-answer`), parts it never publishes (`x-internal`).

type Json = Record<string, unknown>;

/**
 * What the gateway answers itself, from the pipeline generation's own data, before authentication; never proxied or rate
 * limited. `api-catalog`: the RFC 9727 catalog of every version served; `interface-document`: the document it is declared in.
 */
export const GATEWAY_ANSWERS = ['api-catalog', 'interface-document'] as const;
export type GatewayAnswer = (typeof GATEWAY_ANSWERS)[number];

/** The well-known URI RFC 9727 §2 registers: at the host's root, outside every version's base path. */
export const API_CATALOG_PATH = '/.well-known/api-catalog';

export interface AnswerMarks {
  answeredBy?: GatewayAnswer;
  internal?: true;
}

/** Where a path item is served: under the document's base path, or (a path-level `servers`) under its own. */
export interface PathItemPlace {
  route: string;
  underBasePath: boolean;
}

/**
 * Checks an operation's marks. An operation outside the base path must be one the gateway answers (the upstream is only
 * reached under the base path); a gateway answer is a GET of a literal path that says it needs no key (`security: []`),
 * the catalog at its well-known path, a document under its own base path. `x-internal` (operation or path item): left out
 * of the published document; not access control, so a gateway answer, served without a key, cannot be internal.
 */
export function compileAnswerMarks(operation: Json, pathItem: Json, method: string, place: PathItemPlace, where: string): AnswerMarks {
  const internal = internalMark(operation['x-internal'], `${where}.x-internal`) || internalMark(pathItem['x-internal'], `${where}'s path x-internal`);
  const value = operation['x-gateway-answer'];
  if (value === undefined) {
    if (!place.underBasePath) {
      throw new Error(
        `interface document: ${where} is outside the base path (its path's servers); only an operation the gateway answers itself (x-gateway-answer) may be`,
      );
    }
    return internal ? { internal } : {};
  }
  if (!(GATEWAY_ANSWERS as readonly unknown[]).includes(value)) {
    throw new Error(`interface document: ${where}.x-gateway-answer must be one of ${GATEWAY_ANSWERS.join(', ')}`);
  }
  const answer = value as GatewayAnswer;
  if (method !== 'GET') throw new Error(`interface document: ${where}.x-gateway-answer: the gateway answers GET (and HEAD with it) only`);
  if (!Array.isArray(operation.security) || operation.security.length !== 0) {
    throw new Error(`interface document: ${where}.security must be [] : the gateway answers ${answer} without an API key`);
  }
  if (internal) throw new Error(`interface document: ${where} is answered without a key, so it cannot be x-internal`);
  if (place.route.includes('{')) throw new Error(`interface document: ${where}.x-gateway-answer: the path must have no parameters`);
  if (answer === 'api-catalog' && place.route !== API_CATALOG_PATH) {
    throw new Error(
      `interface document: ${where}: the api-catalog is served at ${API_CATALOG_PATH} (RFC 9727), outside the base path (a path-level servers at the host's root)`,
    );
  }
  if (answer === 'interface-document' && !place.underBasePath) {
    throw new Error(`interface document: ${where}: the interface document is served under the document's own base path`);
  }
  return { answeredBy: answer };
}

function internalMark(value: unknown, where: string): boolean {
  if (value === undefined || value === false) return false;
  if (value === true) return true;
  throw new Error(`interface document: ${where} must be true or false`);
}

/** At most one operation of a document gives each answer: two catalogs or two copies of the document would be ambiguous. */
export function checkOneAnswerEach(operations: ReadonlyArray<{ id: string; answeredBy?: GatewayAnswer }>): void {
  const seen = new Map<GatewayAnswer, string>();
  for (const { id, answeredBy } of operations) {
    if (answeredBy === undefined) continue;
    const other = seen.get(answeredBy);
    if (other !== undefined) throw new Error(`interface document: ${other} and ${id} both give x-gateway-answer ${answeredBy}; declare it once`);
    seen.set(answeredBy, id);
  }
}
