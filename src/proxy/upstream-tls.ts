// The TLS the gateway speaks to its backends: one environment's settings, their files read and checked, as a connection's options.
import { createSecureContext, getCACertificates, type SecureVersion } from 'node:tls';
import type { Environment, GatewayConfig, UpstreamTlsSettings } from '../config/schema.ts';
import { CertificateFileError, readCertificateBundle, readCertificatePair } from '../http/certificates.ts';

/** What every new connection to an https:// backend is made with (tls.connect's options). Verification is never off. */
export interface UpstreamTlsOptions {
  /** The authorities trusted; absent: Node's default store. */
  ca?: string[];
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  minVersion: SecureVersion;
  /** Always true: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment would otherwise switch verification off. */
  rejectUnauthorized: true;
}

export interface UpstreamTls {
  connect: UpstreamTlsOptions;
  /** The client certificate's notAfter, when one is offered (the expiry metric). */
  clientNotAfter?: Date;
}

/** The variable of each running-environment setting that asks for TLS to the backend. */
const TLS_VARIABLES = {
  caFile: 'UPSTREAM_TLS_CA_FILE',
  certFile: 'UPSTREAM_TLS_CERT_FILE',
  keyFile: 'UPSTREAM_TLS_KEY_FILE',
  servername: 'UPSTREAM_TLS_SERVERNAME',
} as const;

/** What one pipeline generation connects to its backends with: the running environment's TLS, and staging's for the shadow pool. */
export interface BackendTls extends UpstreamTls {
  /** upstreamTls.staging's, for shadow requests to an https:// staging; read only while shadowing is on. */
  shadow?: UpstreamTlsOptions;
  /**
   * The notAfter of staging's client certificate, when shadow requests offer one from a gateway of another environment (the
   * expiry metric); on a staging gateway it is `clientNotAfter`.
   */
  shadowClientNotAfter?: Date;
}

type TlsConfig = Pick<GatewayConfig, 'environment' | 'upstreamTls' | 'sources' | 'upstreamUrl' | 'shadow' | 'environments' | 'versions'>;

/** A backend the settings would be used for: which document's, its address, and the setting it came from. */
interface Backend {
  key: string;
  url: string;
  /** The setting of the address, as the operator knows it. */
  address: string;
  /** What the gateway sends it: the requests it serves, or their shadow copies. */
  role: 'upstream' | 'shadow upstream';
}

/** The backends the running environment's settings are used for: each served document's upstream. */
function servedBackends(config: TlsConfig): Backend[] {
  return config.sources.map(({ key, upstreamBaseUrl }) => ({
    key,
    role: 'upstream',
    url: upstreamBaseUrl,
    address:
      key !== 'contract'
        ? key.replace(/\.document$/, `.upstreams.${config.environment}`)
        : config.upstreamUrl !== undefined
          ? 'UPSTREAM_URL (upstreamUrl)'
          : `environments.${config.environment}.upstream`,
  }));
}

/** Where shadow requests go, which upstreamTls.staging is used for: as src/wiring/version-proxies.ts sends them. */
function shadowBackends(config: TlsConfig): Backend[] {
  const first: Backend =
    config.shadow.upstreamUrl !== null
      ? { key: 'contract', role: 'shadow upstream', url: config.shadow.upstreamUrl, address: 'SHADOW_UPSTREAM_URL (shadow.upstreamUrl)' }
      : { key: 'contract', role: 'shadow upstream', url: config.environments.staging.upstream, address: 'environments.staging.upstream' };
  return [
    first,
    ...config.versions.map(
      (version, index): Backend => ({
        key: `versions.${index}.document`,
        role: 'shadow upstream',
        url: version.upstreams.staging,
        address: `versions.${index}.upstreams.staging`,
      }),
    ),
  ];
}

/**
 * The words an operator knows each setting by: the variable sets only the running environment's key (load-config), so
 * another environment's (staging's, read for shadowing) is named by its key alone.
 */
function settingName(config: Pick<GatewayConfig, 'environment'>, variable: string, environment: Environment, key: keyof UpstreamTlsSettings): string {
  const setting = `upstreamTls.${environment}.${key}`;
  return environment === config.environment ? `${variable} (${setting})` : setting;
}

/** Whether any operation is shadowed (a share above 0): only then are staging's TLS files read and watched. */
export function shadowingOn(config: Pick<GatewayConfig, 'shadow'>): boolean {
  return Object.values(config.shadow.sample).some((share) => share > 0);
}

/** The running environment's TLS, and staging's for the shadow pool when shadowing is on; each file fault names its setting. */
export function readBackendTls(config: TlsConfig & Pick<GatewayConfig, 'shadow'>): BackendTls {
  const served = readUpstreamTls(config, config.environment);
  if (!shadowingOn(config)) return served;
  if (config.environment === 'staging') return { ...served, shadow: served.connect };
  const staging = readUpstreamTls(config, 'staging');
  return staging.clientNotAfter === undefined
    ? { ...served, shadow: staging.connect }
    : { ...served, shadow: staging.connect, shadowClientNotAfter: staging.clientNotAfter };
}

/** Reads one environment's upstream TLS files; a file that does not parse, or a client key not the certificate's, throws naming the setting. */
export function readUpstreamTls(config: TlsConfig, environment: Environment): UpstreamTls {
  const settings = config.upstreamTls[environment];
  // The backends these settings are used for: the running environment's upstreams, and staging's shadow targets while
  // shadowing is on. Another environment's upstreams do not use them: a plain one of those is no fault.
  const backends = [
    ...(environment === config.environment ? servedBackends(config) : []),
    ...(environment === 'staging' && shadowingOn(config) ? shadowBackends(config) : []),
  ];
  const plain = backends.find((backend) => backend.url.startsWith('http:'));
  if (plain !== undefined && filesOf(settings).length + (settings.servername === null ? 0 : 1) > 0) {
    // Certificates configured for a backend spoken to in plain HTTP: the operator meant TLS, and would not get it.
    // Both sides named as the operator set them: the TLS settings given, and the setting of the plain address.
    const given = (Object.keys(TLS_VARIABLES) as Array<keyof typeof TLS_VARIABLES>)
      .filter((key) => settings[key] !== null)
      .map((key) => settingName(config, TLS_VARIABLES[key], environment, key));
    throw new CertificateFileError(
      `${given.join(', ')}: set, but the ${plain.role} of ${plain.key} (${plain.url}, from ${plain.address}) is plain http://; use its https:// address there, or unset them`,
    );
  }
  const connect: UpstreamTlsOptions = { minVersion: settings.minVersion, rejectUnauthorized: true };
  let clientNotAfter: Date | undefined;
  if (settings.caFile !== null) {
    const bundle = readCertificateBundle(settings.caFile, settingName(config, 'UPSTREAM_TLS_CA_FILE', environment, 'caFile'));
    // `ca` replaces Node's store; `add` puts that store (with NODE_EXTRA_CA_CERTS, and the system's under --use-system-ca) back in.
    connect.ca = settings.caMode === 'add' ? [...getCACertificates('default'), ...bundle] : bundle;
  }
  if (settings.certFile !== null && settings.keyFile !== null) {
    const pair = readCertificatePair({
      certFile: settings.certFile,
      keyFile: settings.keyFile,
      certSetting: settingName(config, 'UPSTREAM_TLS_CERT_FILE', environment, 'certFile'),
      keySetting: settingName(config, 'UPSTREAM_TLS_KEY_FILE', environment, 'keyFile'),
    });
    connect.cert = pair.cert;
    connect.key = pair.key;
    clientNotAfter = pair.notAfter;
  }
  if (settings.servername !== null) connect.servername = settings.servername;
  try {
    // What every connection will make, made once here: OpenSSL's refusals (a key too small...) refuse the configuration.
    createSecureContext(connect);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new CertificateFileError(`upstreamTls.${environment}: the files cannot make a TLS connection: ${why}`, { cause: error });
  }
  return clientNotAfter === undefined ? { connect } : { connect, clientNotAfter };
}

function filesOf({ caFile, certFile, keyFile }: UpstreamTlsSettings): string[] {
  return [caFile, certFile, keyFile].filter((file): file is string => file !== null);
}

/** The files the backends' TLS reads (readBackendTls), for the certificate watch: the running environment's, and staging's while shadowing is on. */
export function upstreamTlsFiles(config: Pick<GatewayConfig, 'environment' | 'upstreamTls' | 'shadow'>): string[] {
  const files = filesOf(config.upstreamTls[config.environment]);
  if (config.environment === 'staging' || !shadowingOn(config)) return files;
  return [...new Set([...files, ...filesOf(config.upstreamTls.staging)])];
}
