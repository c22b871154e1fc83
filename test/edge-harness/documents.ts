// The interface documents a case's gateway may serve: the project's, or one whose listPets declares no `default`, so that the
// statuses it leaves out are undeclared there (every operation of the project's document declares `default`).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

export type HarnessDocument = 'v1' | 'listPets-without-default';

type Document = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };

const PROJECT_DOCUMENT = new URL('../../config/petstore.openapi.yaml', import.meta.url);

function readProjectDocument(): Document {
  return parse(readFileSync(PROJECT_DOCUMENT, 'utf8')) as Document;
}

/**
 * The statuses listPets declares besides `default`: read from the document's keys, so the harness knows which statuses the
 * variant leaves undeclared without asking the gateway. A range key (`5XX`) would cover statuses the harness cannot list: refused.
 */
export const LIST_PETS_DECLARED: ReadonlySet<number> = (() => {
  const keys = Object.keys(readProjectDocument().paths['/pets']!.get!.responses).filter((key) => key !== 'default');
  const ranged = keys.find((key) => !/^\d{3}$/.test(key));
  if (ranged !== undefined) throw new Error(`listPets declares the range ${ranged}: the harness's variant document cannot list what it leaves undeclared`);
  return new Set(keys.map(Number));
})();

/** Writes the variant without listPets' `default` into a directory of its own; `remove` deletes it. */
export function writeListPetsWithoutDefault(): { path: string; remove(): void } {
  const document = readProjectDocument();
  delete document.paths['/pets']!.get!.responses.default;
  const directory = mkdtempSync(join(tmpdir(), 'edge-harness-contract-'));
  const path = join(directory, 'petstore.openapi.yaml');
  writeFileSync(path, stringify(document));
  return { path, remove: () => rmSync(directory, { recursive: true, force: true }) };
}
