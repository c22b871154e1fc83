// What the pipeline reads of compiled operations, row by row: the sunsets the gauge shows, the route a stage requires.
import { describe, expect, it } from 'vitest';
import { operationSunsets, routeOf, type Operation, type RouteSlice } from '../../../src/contract/operations.ts';

const operation = (id: string, deprecation?: Operation['deprecation']): Operation =>
  ({
    id,
    method: 'GET',
    pathTemplate: `/${id}`,
    route: `/v1/${id}`,
    parameters: [],
    queryParameters: [],
    requestHeaders: [],
    responseHeaders: new Map(),
    responses: { for: () => undefined, memberNames: new Set() },
    ...(deprecation ? { deprecation } : {}),
  }) as Operation;

const SUNSET = new Date('2032-01-01T00:00:00Z');

describe('operationSunsets', () => {
  it.each([
    ['none of stable operations', [operation('listPets')], []],
    ['none of a deprecated operation without a date', [operation('getPet', { replacement: 'getPetV2' })], []],
    [
      'the date of each deprecated operation that has one',
      [operation('listPets'), operation('getPet', { sunset: SUNSET })],
      [{ operation: 'getPet', sunset: SUNSET }],
    ],
  ])('lists %s', (_case, operations, sunsets) => {
    expect(operationSunsets(operations)).toEqual(sunsets);
  });
});

describe('routeOf', () => {
  it('gives the route the match stage wrote', () => {
    const route: RouteSlice = { operation: operation('getPet'), pathParams: { petId: '7' } };
    expect(routeOf({ route })).toBe(route);
  });

  it.each([{}, { route: undefined }])('throws, a gateway bug, when no route was written (%o)', (record) => {
    expect(() => routeOf(record)).toThrow('no route in the request record: a stage runs before createRequireOperation');
  });
});
