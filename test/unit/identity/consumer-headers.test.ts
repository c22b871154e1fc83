// The plain X-Consumer-* headers: always valid header values, whatever the consumer is called.
import { describe, expect, it } from 'vitest';
import { CONSUMER_HEADER_NAMES, consumerHeaders, encodeHeaderValue } from '../../../src/identity/consumer-headers.ts';

describe('consumerHeaders', () => {
  it('names the key id and the consumer', () => {
    expect(consumerHeaders({ keyId: 'key_abc', consumer: 'acme' })).toEqual({ 'x-consumer-id': 'key_abc', 'x-consumer-name': 'acme' });
  });

  it('lists the names a client must never send through', () => {
    expect(CONSUMER_HEADER_NAMES).toEqual(['x-consumer-id', 'x-consumer-name']);
  });
});

describe('encodeHeaderValue', () => {
  it.each([
    ['acme', 'acme'],
    ['Acme Pets, Inc. (EU)', 'Acme Pets, Inc. (EU)'],
    ['100%', '100%25'],
    ['Zoë', 'Zo%C3%AB'],
    ['東京', '%E6%9D%B1%E4%BA%AC'],
    ['a\r\nX-Injected: 1', 'a%0D%0AX-Injected: 1'],
    ['tab\there', 'tab%09here'],
    ['nul\0', 'nul%00'],
    ['del\x7f', 'del%7F'],
    ['lone \uD800', 'lone %EF%BF%BD'],
  ])('%j is sent as %j, which decodeURIComponent reverses', (name, sent) => {
    expect(encodeHeaderValue(name)).toBe(sent);
    if (name.isWellFormed()) expect(decodeURIComponent(sent)).toBe(name);
  });
});
