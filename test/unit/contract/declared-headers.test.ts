// Header parameters of the document, row by row: the name forwarded, ignored as OpenAPI says, or refused at start-up.
import { describe, expect, it } from 'vitest';
import { headerParameterName } from '../../../src/contract/declared-headers.ts';

const WHERE = 'paths./pets.get.parameters[0]';

describe('headerParameterName', () => {
  it.each([
    ['X-Trace-Context', 'x-trace-context'],
    ['if-none-match', 'if-none-match'],
    ['Accept', undefined],
    ['Content-Type', undefined],
    ['Authorization', undefined],
  ])('%s is forwarded as %s', (name, forwarded) => {
    expect(headerParameterName(name, WHERE)).toBe(forwarded);
  });

  it.each([
    ['Bad Name', 'is not a header field name'],
    ['X-Tracé', 'is not a header field name'],
    ['', 'is not a header field name'],
    ['Host', 'is a header the gateway sets itself or never forwards'],
    ['X-Forwarded-For', 'is a header the gateway sets itself or never forwards'],
    ['Connection', 'is a header the gateway sets itself or never forwards'],
    ['X-Request-Id', 'is a header the gateway sets itself or never forwards'],
  ])('"%s" stops start-up: %s', (name, why) => {
    expect(() => headerParameterName(name, WHERE)).toThrow(`interface document: ${WHERE}.name ${name} ${why}`);
  });
});
