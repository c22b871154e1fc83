// What the gateway publishes about its interface, serialised once per pipeline generation (a reload builds the next): the stages that answer it.
import type { RequestHandler } from 'express';
import type { Contract } from '../contract/compile-contract.ts';
import { publishedDocument } from '../contract/published-document.ts';
import {
  API_CATALOG_MEDIA_TYPE,
  buildApiCatalog,
  interfaceDocumentMediaType,
  interfaceDocumentOf,
  type CatalogVersion,
  type OperationPages,
} from './api-catalog.ts';
import { createApiCatalogAnswer, createInterfaceDocumentAnswer, serialised } from './gateway-answers.ts';

export interface Discovery {
  /** The catalog's stage, for the app's entry; empty when no document declares the catalog. */
  readonly catalogAnswer: readonly RequestHandler[];
  /** The stage that answers the version's own document, for its pipeline; empty when its document declares none. */
  documentAnswer(contract: Contract): readonly RequestHandler[];
}

/** Builds the catalog and every declared document now, so that a request only writes bytes made before it. */
export function compileDiscovery(versions: readonly CatalogVersion[], pages: Readonly<Record<string, OperationPages>>): Discovery {
  const catalogOperation = versions.flatMap(({ contract }) => contract.outsideBasePath).find(({ answeredBy }) => answeredBy === 'api-catalog');
  const catalogAnswer = catalogOperation
    ? [createApiCatalogAnswer({ operation: catalogOperation, catalog: serialised(API_CATALOG_MEDIA_TYPE, buildApiCatalog(versions, pages)) })]
    : [];
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
