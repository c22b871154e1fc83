// The API catalog (RFC 9727): one RFC 9264 JSON linkset of the versions served, their interface documents and deprecations.
import type { VersionDeprecation } from '../config/schema.ts';
import type { Contract } from '../contract/compile-contract.ts';
import type { Operation } from '../contract/operations.ts';

/** RFC 9727 §4.2: the linkset format (RFC 9264 §4.2), with the profile that says it is an API catalog (RFC 9264 §5). */
export const API_CATALOG_MEDIA_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"';

/** A link target object (RFC 9264 §4.2.3): the target, and the media type it is served as. */
export interface LinkTarget {
  href: string;
  type?: string;
}

/** A link context object (RFC 9264 §4.2.2): `anchor`, then one member per relation type, each an array of targets. */
export type LinkContext = { anchor: string } & Partial<Record<Relation, LinkTarget[]>>;
type Relation = 'service-desc' | 'deprecation' | 'sunset' | 'successor-version';

export interface Linkset {
  linkset: LinkContext[];
}

/** A version as the catalog lists it: its compiled document and its deprecation as a whole. */
export interface CatalogVersion {
  contract: Contract;
  deprecation: VersionDeprecation | null;
}

/** The pages about a deprecated operation's deprecation and sunset (config `deprecations.<operationId>`). */
export interface OperationPages {
  documentationUrl: string | null;
  sunsetDocumentationUrl: string | null;
}

/**
 * The media type of an interface document served as JSON. `application/vnd.oai.openapi+json` is in IANA's registry (the
 * OpenAPI Initiative's, with a `version` parameter for the specification's major.minor); `application/openapi+json` is still
 * an Internet-Draft (draft-ietf-httpapi-rest-api-mediatypes), not registered. The `+json` suffix lets generic clients parse it.
 */
export function interfaceDocumentMediaType(contract: Contract): string {
  const [major, minor] = String(contract.document.openapi).split('.');
  return `application/vnd.oai.openapi+json;version=${major}.${minor}`;
}

/** The operation that serves a version's own document (`x-gateway-answer: interface-document`); undefined when it declares none. */
export function interfaceDocumentOf(contract: Contract): Operation | undefined {
  return contract.operations.find((operation) => operation.answeredBy === 'interface-document');
}

/**
 * The catalog: for each version, an entry anchored at its base path with its document (`service-desc`, RFC 8631) and, when the
 * version is deprecated, `deprecation` (RFC 9745 §3), `sunset` (RFC 8594 §6) and `successor-version` (RFC 5829); then an entry
 * for each deprecated operation that has such links.
 *
 * References are relative (`/v1`, `/v1/openapi.json`), resolved against the catalog's own URI (RFC 3986 §5.1.3). RFC 9264
 * §4.2.2 and §4.2.3 require URI references and only recommend against relative ones (SHOULD NOT), so a copy kept outside the
 * HTTP exchange needs the address it was fetched from. The gateway cannot do better honestly: it has no configured public
 * origin, and an origin taken from Host (or X-Forwarded-Host) would let one request put another host into the catalog of
 * every client a cache then serves it to.
 *
 * A version's deprecation dates have no page of their own (config `versionDeprecation` has none): its `deprecation` and
 * `sunset` links point at the version's document, which the gateway serves with that version's Deprecation and Sunset fields,
 * the "API's home document" case of RFC 9745 §2 (the fields' context extended to the whole version).
 *
 * An operation is not a resource with a URI of its own (`/v1/pets/{petId}` is a template, and anchors are URIs), so its entry is
 * anchored at the operation object within the version's document: a JSON Pointer fragment (RFC 6901 §6), percent-encoded,
 * the way OpenAPI's own references point into a document, e.g. `/v1/openapi.json#/paths/~1pets~1%7BpetId%7D/get`. Its links
 * are the configured pages and its replacement; an operation with none, or `x-internal`, or in a version that publishes no
 * document, gets no entry.
 */
export function buildApiCatalog(versions: readonly CatalogVersion[], pages: Readonly<Record<string, OperationPages>>): Linkset {
  const linkset: LinkContext[] = [];
  for (const { contract, deprecation } of versions) {
    const document = interfaceDocumentOf(contract);
    const described = document === undefined ? undefined : [{ href: document.route, type: interfaceDocumentMediaType(contract) }];
    linkset.push({
      anchor: contract.basePath,
      ...(described ? { 'service-desc': described } : {}),
      ...(deprecation && described ? { deprecation: described } : {}),
      ...(deprecation?.sunset && described ? { sunset: described } : {}),
      ...(deprecation?.successor ? { 'successor-version': [{ href: deprecation.successor }] } : {}),
    });
  }
  for (const { contract } of versions) {
    const document = interfaceDocumentOf(contract);
    if (document === undefined) continue;
    for (const operation of contract.operations) {
      if (!operation.deprecation || operation.internal) continue;
      const entry = operationEntry(operation, `${document.route}#${pointerTo(operation)}`, contract, pages[operation.id]);
      if (Object.keys(entry).length > 1) linkset.push(entry);
    }
  }
  return { linkset };
}

function operationEntry(operation: Operation, anchor: string, contract: Contract, page: OperationPages | undefined): LinkContext {
  const replacement = operation.deprecation?.replacement === undefined ? undefined : contract.byId.get(operation.deprecation.replacement);
  return {
    anchor,
    ...(page?.documentationUrl ? { deprecation: [{ href: page.documentationUrl, type: 'text/html' }] } : {}),
    ...(page?.sunsetDocumentationUrl ? { sunset: [{ href: page.sunsetDocumentationUrl, type: 'text/html' }] } : {}),
    // As the operation's own Link field names it (src/policy/deprecation.ts).
    ...(replacement ? { 'successor-version': [{ href: contract.basePath + replacement.pathTemplate }] } : {}),
  };
}

/** `/paths/<template>/<method>` as a URI fragment: `~` and `/` escaped as RFC 6901 says, then what a fragment cannot hold percent-encoded. */
function pointerTo(operation: Operation): string {
  const template = operation.pathTemplate.replaceAll('~', '~0').replaceAll('/', '~1');
  return `/paths/${encodeURIComponent(template)}/${operation.method.toLowerCase()}`;
}
