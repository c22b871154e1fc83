// What the gateway publishes about its interface, serialised once per pipeline generation (a reload builds the next): the stages that answer it.
import type { RequestHandler } from 'express';
import type { Contract } from '../contract/compile-contract.ts';
import { createPathMatcher } from '../contract/path-matcher.ts';
import { publishedDocument } from '../contract/published-document.ts';
import { createPreflight } from '../policy/cors.ts';
import {
  API_CATALOG_MEDIA_TYPE,
  buildApiCatalog,
  interfaceDocumentMediaType,
  interfaceDocumentOf,
  type CatalogVersion,
  type OperationPages,
} from './api-catalog.ts';
import { createApiCatalogAnswer, createInterfaceDocumentAnswer, serialised } from './answer-stages.ts';

export interface Discovery {
  /** The catalog's stages for the app's entry (a page's preflight when CORS is on, then the answer); empty when no document declares it. */
  readonly catalogAnswer: readonly RequestHandler[];
  /** The stage that answers the version's own document, for its pipeline; empty when its document declares none. */
  documentAnswer(contract: Contract): readonly RequestHandler[];
}

export interface DiscoveryOptions {
  versions: readonly CatalogVersion[];
  /** Config `deprecations`: the pages the catalog links deprecated operations to. */
  pages: Readonly<Record<string, OperationPages>>;
  /** CORS's allowed origins when it is on: a page's preflight for the catalog is answered (a version's document has its version's). */
  corsOrigins: readonly string[] | undefined;
}

/** Builds the catalog and every declared document now, so that a request only writes bytes made before it. */
export function compileDiscovery({ versions, pages, corsOrigins }: DiscoveryOptions): Discovery {
  const catalogOperation = versions.flatMap(({ contract }) => contract.outsideBasePath).find(({ answeredBy }) => answeredBy === 'api-catalog');
  const catalogAnswer: RequestHandler[] = [];
  if (catalogOperation) {
    const operations = [catalogOperation];
    if (corsOrigins)
      catalogAnswer.push(createPreflight({ allowedOrigins: corsOrigins, contract: { basePath: '', operations, matchPath: createPathMatcher(operations) } }));
    catalogAnswer.push(createApiCatalogAnswer({ operation: catalogOperation, catalog: serialised(API_CATALOG_MEDIA_TYPE, buildApiCatalog(versions, pages)) }));
  }
  const documentAnswers = new Map<Contract, RequestHandler>();
  for (const { contract } of versions) {
    const operation = interfaceDocumentOf(contract);
    if (operation === undefined) continue;
    const document = serialised(interfaceDocumentMediaType(contract), publishedDocument(contract.document));
    documentAnswers.set(contract, createInterfaceDocumentAnswer({ operation, document, catalogLinked: catalogOperation !== undefined }));
  }
  return {
    catalogAnswer,
    documentAnswer(contract) {
      const answer = documentAnswers.get(contract);
      return answer ? [answer] : [];
    },
  };
}
