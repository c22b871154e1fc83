// The plain X-Consumer-* headers for backends on a trusted network, and the names a client must never get through.

/** Lower-case, as Node's IncomingMessage has them: always removed from the client's request, whatever the settings. */
export const CONSUMER_HEADER_NAMES = ['x-consumer-id', 'x-consumer-name'] as const;

/** Who called, without proof; the name percent-encoded outside printable ASCII, which Node would refuse or send as Latin-1. */
export function consumerHeaders(caller: { keyId: string; consumer: string }): Record<(typeof CONSUMER_HEADER_NAMES)[number], string> {
  return { 'x-consumer-id': caller.keyId, 'x-consumer-name': encodeHeaderValue(caller.consumer) };
}

const NEEDS_ENCODING = /[^\x20-\x24\x26-\x7e]/;

/** Printable ASCII except `%` stays as it is; every other character is percent-encoded as UTF-8 (decodeURIComponent reverses it). */
export function encodeHeaderValue(value: string): string {
  if (!NEEDS_ENCODING.test(value)) return value;
  let encoded = '';
  for (const char of value) encoded += NEEDS_ENCODING.test(char) ? encodeUtf8(char) : char;
  return encoded;
}

function encodeUtf8(char: string): string {
  // A lone surrogate has no UTF-8 form; U+FFFD stands in for it, as TextEncoder would write.
  const bytes = Buffer.from(char.isWellFormed() ? char : '\uFFFD', 'utf8');
  let out = '';
  for (const byte of bytes) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}
