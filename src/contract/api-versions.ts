// Every interface document the gateway serves, loaded together: base paths and operation ids unique across them.
import { basename } from 'node:path';
import { ConfigError } from '../config/load-config.ts';
import type { VersionSource } from '../config/schema.ts';
import { loadContract, type Contract } from './compile-contract.ts';
import type { Operation } from './operations.ts';

/** One version of the interface: its compiled document and where it comes from (upstream, deprecation). */
export interface ApiVersion {
  contract: Contract;
  source: VersionSource;
}

/**
 * Loads every document of the configuration. Stops start-up, naming the config key, on a document that cannot be compiled, base
 * paths that overlap (the outer router would answer 404 for the inner one), an operationId in two documents (refused rather than
 * prefixed, so ids stay as clients see them), a second document declaring the api-catalog, or a successor that names no configured version.
 */
export function loadApiVersions(sources: readonly VersionSource[]): ApiVersion[] {
  const versions: ApiVersion[] = [];
  const owners = new Map<string, VersionSource>();
  for (const source of sources) {
    let contract: Contract;
    try {
      contract = loadContract(source.documentPath);
    } catch (cause) {
      // A missing or malformed document is the operator's to fix: one line naming the key. A bug keeps its stack.
      if (cause instanceof TypeError || cause instanceof ReferenceError) throw cause;
      throw new ConfigError(`config: ${source.key}: ${(cause as Error).message}`, { cause });
    }
    for (const other of versions) {
      const [a, b] = [`${contract.basePath}/`, `${other.contract.basePath}/`];
      if (a.startsWith(b) || b.startsWith(a)) {
        throw new ConfigError(
          `config: ${source.key}: base path ${contract.basePath} overlaps ${other.contract.basePath} of ${other.source.key}; each version needs its own, such as /v2`,
        );
      }
    }
    // A version's requests go to its upstream with the operation's path under the upstream's own path:
    // an upstream copied from another version (…/v1 for /v2) would send one version's calls to the other.
    const upstreamPath = new URL(source.upstreamBaseUrl).pathname.replace(/\/$/, '');
    if (!upstreamPath.endsWith(contract.basePath)) {
      throw new ConfigError(`config: ${source.key}: its upstream ${source.upstreamBaseUrl} must end with the document's base path ${contract.basePath}`);
    }
    const catalogOwner = versions.find((version) => version.contract.outsideBasePath.some(({ answeredBy }) => answeredBy === 'api-catalog'));
    if (catalogOwner && contract.outsideBasePath.some(({ answeredBy }) => answeredBy === 'api-catalog')) {
      throw new ConfigError(
        `config: ${source.key}: the api-catalog is already declared by ${catalogOwner.source.key} (${basename(catalogOwner.source.documentPath)}); ` +
          'the gateway serves one catalog of every version, declared in one document',
      );
    }
    for (const operation of contract.operations) {
      const owner = owners.get(operation.id);
      if (owner) {
        throw new ConfigError(
          `config: ${source.key}: operationId ${operation.id} is also in ${owner.key} (${basename(owner.documentPath)}); ` +
            'operation ids must be unique across documents (metrics, rate limits and the deprecation report are keyed by them)',
        );
      }
      owners.set(operation.id, source);
    }
    versions.push({ contract, source });
  }
  const basePaths = versions.map((version) => version.contract.basePath);
  for (const { contract, source } of versions) {
    const successor = source.deprecation?.successor;
    if (successor === null || successor === undefined) continue;
    if (successor === contract.basePath || !basePaths.includes(successor)) {
      throw new ConfigError(
        `config: ${source.deprecationKey}.successor: ${successor} is not the base path of another configured version (served: ${basePaths.join(', ')})`,
      );
    }
  }
  return versions;
}

/** Every operation of every version, for what is keyed by operationId alone (metrics, brownouts). */
export function allOperations(versions: readonly ApiVersion[]): Operation[] {
  return versions.flatMap((version) => version.contract.operations);
}
