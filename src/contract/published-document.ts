// What the gateway publishes of an interface document: the document as loaded, less what is marked `x-internal: true`.

type Json = Record<string, unknown>;

/** The keys of a path item that hold operations (OpenAPI 3.1 §4.8.9). */
const OPERATION_KEYS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** A local reference to a component: `#/components/<kind>/<name>`, the name pointer-escaped. */
const COMPONENT_REF = /^#\/components\/([^/]+)\/([^/]+)$/;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The document as parsed from its file, with every path item and operation marked `x-internal: true` removed (a path item
 * left with no operation goes too), and the components that only they referenced. Everything else is kept as it is,
 * marks and extensions included: what clients read is what the gateway compiled. The input is not changed.
 */
export function publishedDocument(document: Readonly<Json>): Json {
  const paths: Json = {};
  const removed: unknown[] = [];
  for (const [template, item] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    if (!isObject(item) || item['x-internal'] === true) {
      removed.push(item);
      continue;
    }
    const kept = Object.entries(item).filter(([key, value]) => {
      const internal = OPERATION_KEYS.includes(key) && isObject(value) && value['x-internal'] === true;
      if (internal) removed.push(value);
      return !internal;
    });
    if (kept.some(([key]) => OPERATION_KEYS.includes(key))) paths[template] = Object.fromEntries(kept);
    else removed.push(Object.fromEntries(kept));
  }
  const published: Json = { ...document, paths };
  return structuredClone(withoutOrphanComponents(published, document, removed));
}

/** `published` less the components reached from `removed` that nothing published reaches any more. */
function withoutOrphanComponents(published: Json, document: Readonly<Json>, removed: readonly unknown[]): Json {
  const components = isObject(document.components) ? document.components : undefined;
  if (components === undefined || removed.length === 0) return published;
  const resolve = (ref: string): unknown => {
    const [, kind, name] = COMPONENT_REF.exec(ref) ?? [];
    if (kind === undefined || name === undefined) return undefined;
    const section = components[kind];
    return isObject(section) ? section[name.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
  };
  const { components: _components, ...rest } = published;
  const stillReached = reachedComponents([rest], resolve);
  const orphans = [...reachedComponents(removed, resolve)].filter((ref) => !stillReached.has(ref));
  if (orphans.length === 0) return published;
  const pruned: Json = {};
  for (const [kind, section] of Object.entries(components)) {
    if (!isObject(section)) {
      pruned[kind] = section;
      continue;
    }
    pruned[kind] = Object.fromEntries(
      Object.entries(section).filter(([name]) => !orphans.includes(`#/components/${kind}/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`)),
    );
  }
  return { ...published, components: pruned };
}

/** Every component reference reached from `roots`, following references through the components they name. */
function reachedComponents(roots: readonly unknown[], resolve: (ref: string) => unknown): Set<string> {
  const reached = new Set<string>();
  const pending: unknown[] = [...roots];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) {
      pending.push(...node);
      continue;
    }
    if (!isObject(node)) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && COMPONENT_REF.test(value) && !reached.has(value)) {
        reached.add(value);
        pending.push(resolve(value));
      } else if (typeof value === 'object') {
        pending.push(value);
      }
    }
  }
  return reached;
}
