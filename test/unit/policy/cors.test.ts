// CORS's pure parts: which origins are allowed and what they are told, what a preflight is, header lists said once.
import { describe, expect, it } from 'vitest';
import { compileOriginPolicy, headerList, isPreflight } from '../../../src/policy/cors.ts';

describe('compileOriginPolicy', () => {
  const policy = compileOriginPolicy(['https://shop.example', 'http://localhost:3000']);

  it.each([
    ['https://shop.example', 'https://shop.example'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['https://shop.example.evil.example', undefined],
    ['http://shop.example', undefined],
    ['https://SHOP.example', undefined],
    ['http://localhost:3001', undefined],
    ['null', undefined],
    [undefined, undefined],
  ])('answers the origin %j with %j', (origin, allowOrigin) => {
    expect(policy(origin)).toBe(allowOrigin);
  });

  it('allows nothing when the list is empty', () => {
    expect(compileOriginPolicy([])('https://shop.example')).toBeUndefined();
  });

  it('answers every origin, and none, with * when * is listed', () => {
    const everyOrigin = compileOriginPolicy(['*']);
    expect([everyOrigin('https://shop.example'), everyOrigin(undefined)]).toEqual(['*', '*']);
  });

  it.each([
    [['*', 'https://shop.example'], "CORS: '*' allows every origin: list it alone or not at all"],
    [['https://shop.example/'], 'CORS: https://shop.example/ must be written as a browser sends it'],
    [['null'], 'CORS: null null is the origin of sandboxed frames'],
  ])('refuses %j at construction', (origins, message) => {
    expect(() => compileOriginPolicy(origins)).toThrow(message);
  });
});

describe('isPreflight', () => {
  it.each([
    ['OPTIONS', { origin: 'https://shop.example', 'access-control-request-method': 'POST' }, true],
    ['OPTIONS', { origin: 'https://shop.example' }, false],
    ['OPTIONS', { 'access-control-request-method': 'POST' }, false],
    ['POST', { origin: 'https://shop.example', 'access-control-request-method': 'POST' }, false],
    ['options', { origin: 'https://shop.example', 'access-control-request-method': 'POST' }, false],
  ])('%s with %j: %s', (method, headers, preflight) => {
    expect(isPreflight(method, headers)).toBe(preflight);
  });
});

describe('headerList', () => {
  it.each([
    [['X-Request-Id', 'x-request-id', 'RateLimit'], [], 'X-Request-Id, RateLimit'],
    [['Content-Type', 'ETag', 'location'], ['content-type'], 'ETag, location'],
    [[], [], ''],
  ])('%j less %j is %j', (names, leaveOut, list) => {
    expect(headerList(names, new Set(leaveOut))).toBe(list);
  });
});
