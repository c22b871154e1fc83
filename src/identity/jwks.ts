// The JWKS the admin listener publishes: the signing key, and during a rotation the previous key until its overlap ends.
import type { JWK } from 'jose';
import { systemClock, type Clock } from '../time/clock.ts';
import type { SigningKey } from './signing-key.ts';

/** The JSON document served at /.well-known/jwks.json (RFC 7517). */
export interface JwksDocument {
  readonly keys: readonly Readonly<JWK>[];
}

export interface JwksOptions {
  /** The key that signs now; always published. */
  current: SigningKey;
  /** The key that signed before the rotation, published until `until` so tokens it signed still verify. */
  previous?: { key: SigningKey; until: Date } | undefined;
  clock?: Clock;
}

export interface Jwks {
  /** The document in force at the clock's instant: the current key, then the previous one before its `until`. */
  document(): JwksDocument;
}

/** Both possible documents are built once; a request only compares the clock with the overlap's end. */
export function createJwks(options: JwksOptions): Jwks {
  const { current, previous, clock = systemClock } = options;
  const currentOnly: JwksDocument = Object.freeze({ keys: Object.freeze([current.publicJwk]) });
  const overlapEnd = previous?.until.getTime() ?? -Infinity;
  const withPrevious: JwksDocument = previous ? Object.freeze({ keys: Object.freeze([current.publicJwk, previous.key.publicJwk]) }) : currentOnly;
  return {
    document: function jwksDocument(): JwksDocument {
      return clock.now() < overlapEnd ? withPrevious : currentOnly;
    },
  };
}
