// The field names a Connection value lists (RFC 9110 §7.6.1): hop-by-hop for that one message, never passed on.

/**
 * A reader of Connection values that keeps the set of the value it read last: a keep-alive client sends the same value with every
 * request, a backend with every answer, so the split and the set are made once, not once a message. Names are lower-cased and
 * trimmed; `keeps` leaves a name out of the set. The set is handed out again for the same value: callers only read it.
 */
export function connectionTokenReader(keeps: (name: string) => boolean = () => true): (value: string) => ReadonlySet<string> {
  let lastValue: string | undefined;
  let lastTokens: ReadonlySet<string> = new Set();
  return function connectionTokens(value) {
    if (value !== lastValue) {
      const tokens = new Set<string>();
      for (const token of value.split(',')) {
        const name = token.trim().toLowerCase();
        if (name !== '' && keeps(name)) tokens.add(name);
      }
      lastTokens = tokens;
      lastValue = value;
    }
    return lastTokens;
  };
}
