// Every operation of every served version, in the order the versions are served.
import { describe, expect, it } from 'vitest';
import { allOperations, type ApiVersion } from '../../../src/contract/api-versions.ts';
import type { Operation } from '../../../src/contract/operations.ts';

const version = (...ids: string[]) => ({ contract: { operations: ids.map((id) => ({ id }) as Operation) } }) as unknown as ApiVersion;

describe('allOperations', () => {
  it.each([
    ['no versions', [], []],
    ['one version', [version('listPets', 'getPet')], ['listPets', 'getPet']],
    ["two versions, the first one's first", [version('listPets'), version('listAnimals', 'getAnimal')], ['listPets', 'listAnimals', 'getAnimal']],
    ['a version without operations', [version(), version('getAnimal')], ['getAnimal']],
  ])('of %s', (_case, versions, ids) => {
    expect(allOperations(versions).map((operation) => operation.id)).toEqual(ids);
  });
});
