// From the upstreamIdentity settings to what the proxy sends and the admin listener publishes; built once at start-up.
import type { Environment, GatewayConfig } from '../config/schema.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { consumerHeaders } from './consumer-headers.ts';
import { createIdentitySigner, type IdentityCaller, type IdentitySigner } from './identity-signer.ts';
import { createJwks, type Jwks } from './jwks.ts';
import { KEY_FILE_SETTING, loadSigningKey, PREVIOUS_KEY_FILE_SETTING, SigningKeyError, type SigningKey } from './signing-key.ts';

export type UpstreamIdentitySettings = GatewayConfig['upstreamIdentity'];

export interface UpstreamIdentityDeps {
  environment: Environment;
  clock?: Clock;
  /** Counts signatures (see IdentitySignerOptions.onSigned). */
  onSigned?: () => void;
}

/** What start-up logs: whether identity assertion is on, and with which keys. */
export type UpstreamIdentitySummary =
  | { signing: false; consumerHeaders: boolean }
  | {
      signing: true;
      consumerHeaders: boolean;
      algorithm: string;
      kid: string;
      issuer: string;
      audience: string;
      ttlSeconds: number;
      previousKid: string | null;
      previousKeyUntil: string | null;
    };

export interface UpstreamIdentity {
  /** The upstream request's lower-case headers for this caller: `authorization` when signing, `x-consumer-*` when configured. */
  headersFor(caller: IdentityCaller): Promise<Readonly<Record<string, string>>>;
  /**
   * The same headers as the staging deployment's gateway sends them (its token's `environment` claim is `staging`): what a shadow
   * copy of a production request carries to the staging backend (src/shadow).
   */
  stagingHeadersFor(caller: IdentityCaller): Promise<Readonly<Record<string, string>>>;
  /** The JWKS to serve at /.well-known/jwks.json on the admin listener; null when not signing (answer 404). */
  readonly jwks: Jwks | null;
  /** The signer itself, null when not signing. */
  readonly signer: IdentitySigner | null;
  readonly summary: UpstreamIdentitySummary;
}

const NOTHING: Readonly<Record<string, string>> = Object.freeze({});

/** Nothing signed: the upstream gets no Authorization, and the plain consumer headers only when configured. */
export function unsignedIdentity(withConsumer: boolean): UpstreamIdentity {
  const headersFor = async function identityHeaders(caller: IdentityCaller) {
    return withConsumer ? consumerHeaders(caller) : NOTHING;
  };
  return {
    headersFor,
    stagingHeadersFor: headersFor,
    jwks: null,
    signer: null,
    summary: { signing: false, consumerHeaders: withConsumer },
  };
}

/** Reads and checks the key files (a SigningKeyError names the setting), then builds the signer and the JWKS. */
export async function loadUpstreamIdentity(settings: UpstreamIdentitySettings, deps: UpstreamIdentityDeps): Promise<UpstreamIdentity> {
  const { environment, clock = systemClock, onSigned } = deps;
  const withConsumer = settings.consumerHeaders;
  if (settings.keyFile === null) return unsignedIdentity(withConsumer);

  const key = await loadSigningKey(settings.keyFile, KEY_FILE_SETTING);
  let previous: { key: SigningKey; until: Date } | undefined;
  if (settings.previousKeyFile !== null && settings.previousKeyUntil !== null) {
    const previousKey = await loadSigningKey(settings.previousKeyFile, PREVIOUS_KEY_FILE_SETTING);
    if (previousKey.kid === key.kid) {
      throw new SigningKeyError(
        'same_as_current',
        `${PREVIOUS_KEY_FILE_SETTING}: ${settings.previousKeyFile} is the same key as ${KEY_FILE_SETTING}; after a rotation it must be the old key`,
      );
    }
    previous = { key: previousKey, until: settings.previousKeyUntil };
  }

  const signerFor = (claimed: Environment) =>
    createIdentitySigner({
      key,
      issuer: settings.issuer,
      audience: settings.audience,
      environment: claimed,
      ttlSeconds: settings.ttlSeconds,
      maxCachedTokens: settings.maxCachedTokens,
      clock,
      ...(onSigned ? { onSigned } : {}),
    });
  const signer = signerFor(environment);
  // Made at the first shadow request only: a gateway that never shadows keeps one token cache.
  let stagingSigner: IdentitySigner | undefined = environment === 'staging' ? signer : undefined;
  const headersWith = async (from: IdentitySigner, caller: IdentityCaller) => {
    const authorization = `Bearer ${await from.tokenFor(caller)}`;
    return withConsumer ? { authorization, ...consumerHeaders(caller) } : { authorization };
  };
  return {
    headersFor: function identityHeaders(caller) {
      return headersWith(signer, caller);
    },
    stagingHeadersFor: function stagingIdentityHeaders(caller) {
      stagingSigner ??= signerFor('staging');
      return headersWith(stagingSigner, caller);
    },
    jwks: createJwks({ current: key, previous, clock }),
    signer,
    summary: {
      signing: true,
      consumerHeaders: withConsumer,
      algorithm: key.algorithm,
      kid: key.kid,
      issuer: settings.issuer,
      audience: settings.audience,
      ttlSeconds: settings.ttlSeconds,
      previousKid: previous?.key.kid ?? null,
      previousKeyUntil: previous?.until.toISOString() ?? null,
    },
  };
}
