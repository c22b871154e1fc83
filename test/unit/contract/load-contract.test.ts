// A reload reads every document again: an unchanged one keeps its compiled contract (validators V8 has optimised), a changed one is compiled.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadContract, REMEMBERED_DOCUMENTS } from '../../../src/contract/compile-contract.ts';

const documentTitled = (title: string) => `openapi: 3.1.0
info: { title: ${title}, version: '1' }
servers: [{ url: 'https://example.com/v1' }]
paths:
  /pets:
    get:
      operationId: listPets
      responses:
        '200': { description: ok, content: { application/json: { schema: { type: array } } } }
`;

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'load-contract-'));
  file = join(dir, 'document.yaml');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('gives the contract compiled before when the document is read again unchanged', () => {
  writeFileSync(file, documentTitled('Pets'));
  const first = loadContract(file);
  expect(loadContract(file)).toBe(first);
});

it('compiles the document again when its text has changed', () => {
  writeFileSync(file, documentTitled('Pets'));
  const first = loadContract(file);
  writeFileSync(file, documentTitled('Pets again'));
  const second = loadContract(file);
  expect(second).not.toBe(first);
  expect([first.title, second.title]).toEqual(['Pets', 'Pets again']);
  expect(second.byId.get('listPets')).not.toBe(first.byId.get('listPets'));
});

it('refuses a document that has become malformed, whatever was compiled from it before', () => {
  writeFileSync(file, documentTitled('Pets'));
  loadContract(file);
  writeFileSync(file, documentTitled('Pets').replace('openapi: 3.1.0', 'openapi: 3.0.3'));
  expect(() => loadContract(file)).toThrow('openapi must be a 3.1.x version');
});

it('forgets the document read least recently once more files than a configuration serves were read', () => {
  const files = Array.from({ length: REMEMBERED_DOCUMENTS + 1 }, (_, index) => join(dir, `document-${index}.yaml`));
  for (const [index, path] of files.entries()) writeFileSync(path, documentTitled(`Pets ${index}`));
  const first = loadContract(files[0]!);
  const second = loadContract(files[1]!);
  // The first is read again: the second is now the least recently read.
  expect(loadContract(files[0]!)).toBe(first);
  for (const path of files.slice(2)) loadContract(path);
  expect(loadContract(files[0]!)).toBe(first);
  expect(loadContract(files[1]!)).not.toBe(second);
});
