// getPet's Deprecation and Sunset fields read as their RFCs define them: Deprecation with a Structured Fields parser (RFC 9651), Sunset as an HTTP-date.
import request from 'supertest';
import { parseItem } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPetStoreGateway, type PetStoreGateway } from '../helpers/start-pet-store-gateway.ts';

/** config/gateway.yaml's deprecations.getPet.deprecatedAt, and the document's x-sunset of getPet. */
const DEPRECATED_AT = Date.parse('2026-11-21T00:00:00Z');
const SUNSET = Date.parse('2030-12-05T00:00:00Z');

/**
 * RFC 9745 §2.1: Deprecation is an Item whose value is a Date (RFC 9651 §3.3.7, `@` and seconds since the epoch). The
 * date, or undefined for a field that is not one: not an Item, or an Item of another type.
 */
function deprecationDate(field: string): Date | undefined {
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(field);
  } catch {
    return undefined;
  }
  const [value] = item;
  return value instanceof Date ? value : undefined;
}

/** RFC 9110 §5.6.7: the one form of HTTP-date a sender generates (IMF-fixdate), e.g. `Thu, 05 Dec 2030 00:00:00 GMT`. */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

let store: PetStoreGateway;
let deprecation: string;
let sunset: string;

beforeAll(async () => {
  store = await startPetStoreGateway();
  const res = await request(store.gateway.app).get('/v1/pets/1').set('Authorization', store.auth);
  expect(res.status).toBe(200);
  deprecation = String(res.headers.deprecation);
  sunset = String(res.headers.sunset);
});
afterAll(async () => {
  await store?.close();
});

describe('Deprecation (RFC 9745)', () => {
  it('is an sf-date Item without parameters, the configured deprecatedAt', () => {
    const [value, parameters] = parseItem(deprecation);
    expect(value).toBeInstanceOf(Date);
    expect((value as Date).getTime()).toBe(DEPRECATED_AT);
    expect(parameters.size).toBe(0);
    expect(deprecationDate(deprecation)?.getTime()).toBe(DEPRECATED_AT);
  });

  it.each([
    ['?1', 'a Boolean Item'],
    ['true', 'a Token Item (the draft-era `Deprecation: true`)'],
    ['1795219200', 'an Integer Item: the seconds without their @'],
  ])('is not %j: %s fails the same check', (field) => {
    expect(deprecationDate(field)).toBeUndefined();
  });
});

describe('Sunset (RFC 8594)', () => {
  // Sunset predates Structured Fields: RFC 8594 §3 defines it as an HTTP-date, and that grammar (a comma, spaces, names of
  // days and months) is no Structured Field type, so an SF parser is the wrong judge; the HTTP-date rules of RFC 9110 are.
  it("is an IMF-fixdate, the document's x-sunset", () => {
    expect(sunset).toMatch(IMF_FIXDATE);
    expect(Date.parse(sunset)).toBe(SUNSET);
  });
});
