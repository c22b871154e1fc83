// The TLS components (tls-at-gateway, upstream-mtls) and the cert-manager example render with `kubectl kustomize` onto each overlay, mounting the certificates as Secret directories the gateway's settings point into.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import type { IContainer, IPodSpec, IService } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ENV_KEYS, loadConfig } from '../../../src/config/load-config.ts';
import { readBackendTls } from '../../../src/proxy/upstream-tls.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';
import { find, KUBERNETES_DIR, kustomize, validateObject, type KubeObject } from './kustomize.ts';

const NAME = 'petstore-gateway';
/** The Secrets the components mount, as cert-manager writes them (type kubernetes.io/tls). */
const LISTENER_SECRET = 'petstore-gateway-tls';
const UPSTREAM_SECRET = 'petstore-gateway-upstream-tls';
/** The days before the end at which PetstoreGatewayCertificateExpiresSoon tickets, from deploy/prometheus/alerts.yaml. */
const ALERT_DAYS = Number(
  /- time\(\) < (\d+) \* 86400/.exec(
    (
      parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as {
        groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
      }
    ).groups
      .flatMap((group) => group.rules)
      .find((rule) => rule.alert === 'PetstoreGatewayCertificateExpiresSoon')!.expr,
  )![1],
);

const work = mkdtempSync(join(tmpdir(), 'kubernetes-tls-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Renders an overlay with these components added, from a kustomization in a temporary directory. */
function render(environment: string, components: readonly string[]): KubeObject[] {
  const dir = mkdtempSync(join(work, `${environment}-`));
  // kustomize takes no absolute paths: everything relative to the temporary kustomization.
  const from = (path: string) => relative(dir, join(KUBERNETES_DIR, path));
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    `resources:\n  - ${from(`overlays/${environment}`)}\ncomponents:\n${components.map((component) => `  - ${from(`components/${component}`)}\n`).join('')}`,
  );
  return kustomize(dir);
}

const podOf = (objects: readonly KubeObject[]): IPodSpec => find<IDeployment>(objects, 'Deployment', NAME).spec!.template.spec!;
const gatewayOf = (objects: readonly KubeObject[]): IContainer => podOf(objects).containers.find((container) => container.name === 'gateway')!;
const envOf = (objects: readonly KubeObject[]): Record<string, string | undefined> =>
  Object.fromEntries(gatewayOf(objects).env!.map((variable) => [variable.name, variable.value]));

/** The file path a key of a Secret has in the gateway container: its volume mounted as a directory. */
function fileOf(objects: readonly KubeObject[], secretName: string, key: string): string {
  const volumes = podOf(objects).volumes!.filter((volume) => volume.secret?.secretName === secretName);
  expect(volumes, `one volume of Secret ${secretName}`).toHaveLength(1);
  const volume = volumes[0]!;
  // Every key of the Secret, as cert-manager writes them: no items list that a renamed key would fall out of.
  expect(volume.secret!.items).toBeUndefined();
  const mounts = gatewayOf(objects).volumeMounts!.filter((mount) => mount.name === volume.name);
  expect(mounts).toHaveLength(1);
  expect(mounts[0]!.readOnly).toBe(true);
  return `${mounts[0]!.mountPath}/${key}`;
}

/** The settings a pod would load: stand-ins for what comes from the Secret and the Downward API. */
function podConfig(objects: readonly KubeObject[]) {
  const env = Object.fromEntries(
    gatewayOf(objects).env!.map((variable) => [variable.name, variable.value ?? (variable.valueFrom?.secretKeyRef ? 'redis://redis:6379' : '1000')]),
  );
  return loadConfig(env);
}

describe.each(['production', 'staging'])('the TLS components on overlays/%s', (environment) => {
  let both: KubeObject[] | undefined;
  const objects = () => (both ??= render(environment, ['tls-at-gateway', 'upstream-mtls']));

  it('render valid objects, the same ones as the overlay alone', () => {
    for (const object of objects()) expect(() => validateObject(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
    const names = (rendered: readonly KubeObject[]) => rendered.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    expect(names(objects())).toEqual(names(kustomize(join(KUBERNETES_DIR, 'overlays', environment))));
  });

  it("point TLS_CERT_FILE and TLS_KEY_FILE into the listener's Secret, and the upstream settings into the upstream's", () => {
    const env = envOf(objects());
    expect(env.TLS_CERT_FILE).toBe(fileOf(objects(), LISTENER_SECRET, 'tls.crt'));
    expect(env.TLS_KEY_FILE).toBe(fileOf(objects(), LISTENER_SECRET, 'tls.key'));
    expect(env.UPSTREAM_TLS_CERT_FILE).toBe(fileOf(objects(), UPSTREAM_SECRET, 'tls.crt'));
    expect(env.UPSTREAM_TLS_KEY_FILE).toBe(fileOf(objects(), UPSTREAM_SECRET, 'tls.key'));
    expect(env.UPSTREAM_TLS_CA_FILE).toBe(fileOf(objects(), UPSTREAM_SECRET, 'ca.crt'));
  });

  it('configure the gateway with them: an HTTPS listener, mutual TLS to the backend, the admin listener left plain', () => {
    const config = podConfig(objects());
    expect(config.environment).toBe(environment);
    expect(config.listen.tls).toEqual({ certFile: envOf(objects()).TLS_CERT_FILE, keyFile: envOf(objects()).TLS_KEY_FILE });
    expect(config.upstreamTls[config.environment]).toMatchObject({
      caFile: envOf(objects()).UPSTREAM_TLS_CA_FILE,
      certFile: envOf(objects()).UPSTREAM_TLS_CERT_FILE,
      keyFile: envOf(objects()).UPSTREAM_TLS_KEY_FILE,
    });
    expect(config.listen.adminTls).toEqual({ certFile: null, keyFile: null });
    // Renewed files are taken up by the watch: on, as by default.
    expect(config.certificates.watchIntervalMs).toBeGreaterThan(0);
  });

  it('name only environment variables the gateway reads', () => {
    for (const variable of gatewayOf(objects()).env!)
      expect(Object.keys(ENV_KEYS).concat(['API_KEY_PEPPER', 'GATEWAY_CONFIG']), variable.name).toContain(variable.name);
  });

  it('mount no file with subPath, which would never see a renewed Secret', () => {
    for (const container of [...(podOf(objects()).initContainers ?? []), ...podOf(objects()).containers])
      for (const mount of container.volumeMounts ?? []) expect(mount.subPath, `${container.name} ${mount.mountPath}`).toBeUndefined();
  });

  it('serve HTTPS on the public port, named so, from the Service on 443 and through the NetworkPolicy', () => {
    expect(gatewayOf(objects()).ports).toEqual([
      { name: 'https', containerPort: 8080 },
      { name: 'admin', containerPort: 9090 },
    ]);
    const service = find<IService>(objects(), 'Service', NAME);
    expect(service.spec!.ports).toEqual([{ name: 'https', port: 443, targetPort: 'https', appProtocol: 'https' }]);
    const policy = find<INetworkPolicy>(objects(), 'NetworkPolicy', NAME);
    expect(policy.spec!.ingress![0]!.ports).toEqual([{ port: 'https', protocol: 'TCP' }]);
  });

  it('leave the probes and the scrape on the admin listener in plain HTTP', () => {
    const gateway = gatewayOf(objects());
    expect(gateway.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(gateway.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'admin' });
    expect(find<IService>(objects(), 'Service', `${NAME}-admin`).spec!.ports).toEqual([{ name: 'admin', port: 9090, targetPort: 'admin' }]);
  });

  it('each render alone, touching only its own settings', () => {
    const listener = render(environment, ['tls-at-gateway']);
    expect(Object.keys(envOf(listener)).filter((name) => name.includes('TLS'))).toEqual(['TLS_CERT_FILE', 'TLS_KEY_FILE']);
    const upstream = render(environment, ['upstream-mtls']);
    expect(
      Object.keys(envOf(upstream))
        .filter((name) => name.includes('TLS'))
        .sort(),
    ).toEqual(['UPSTREAM_TLS_CA_FILE', 'UPSTREAM_TLS_CERT_FILE', 'UPSTREAM_TLS_KEY_FILE']);
    // Mutual TLS to the backend leaves the public port as it was.
    expect(find<IService>(upstream, 'Service', NAME).spec!.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
    // And needs the overlay to call the backend by https:// (docs/kubernetes.md): with the configuration's
    // http:// upstream, start-up refuses the settings rather than speak plain HTTP.
    expect(() => readBackendTls(podConfig(upstream))).toThrow(/is plain http:\/\/; use its https:\/\/ address/);
  });
});

describe('deploy/kubernetes/examples/tls, production with both components and cert-manager', () => {
  let rendered: KubeObject[] | undefined;
  const objects = () => (rendered ??= kustomize(join(KUBERNETES_DIR, 'examples/tls')));
  const certificates = () =>
    objects().filter((object) => object.kind === 'Certificate') as Array<
      KubeObject & { spec: { secretName: string; duration: string; renewBefore: string; usages: string[]; privateKey: { rotationPolicy: string } } }
    >;
  const hours = (duration: string) => {
    const match = /^(\d+)h$/.exec(duration);
    if (match === null) throw new Error(`expected a duration in hours, got ${duration}`);
    return Number(match[1]);
  };

  it('renders valid objects in the production namespace, Certificates included', () => {
    for (const object of objects().filter((candidate) => candidate.kind !== 'Certificate'))
      expect(() => validateObject(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
    expect(new Set(objects().map((object) => object.metadata.namespace))).toEqual(new Set(['petstore-production']));
    expect(certificates().map((certificate) => certificate.apiVersion)).toEqual(['cert-manager.io/v1', 'cert-manager.io/v1']);
  });

  it('issues exactly the Secrets the components mount: a server pair for the listener, a client pair for the backend', () => {
    const bySecret = Object.fromEntries(certificates().map((certificate) => [certificate.spec.secretName, certificate.spec.usages]));
    expect(bySecret).toEqual({ [LISTENER_SECRET]: ['server auth'], [UPSTREAM_SECRET]: ['client auth'] });
    const mounted = podOf(objects())
      .volumes!.flatMap((volume) => (volume.secret ? [volume.secret.secretName] : []))
      .filter((name) => name !== NAME)
      .sort();
    expect(mounted).toEqual([LISTENER_SECRET, UPSTREAM_SECRET]);
  });

  it(`renews every certificate more than ${ALERT_DAYS} days before its end, before the alert would ticket, with a new key`, () => {
    for (const { spec } of certificates()) {
      expect(hours(spec.renewBefore), spec.secretName).toBeGreaterThan(ALERT_DAYS * 24);
      expect(hours(spec.renewBefore)).toBeLessThan(hours(spec.duration));
      expect(spec.privateKey.rotationPolicy).toBe('Always');
    }
  });

  it('calls the backend over https://, the only scheme upstream TLS applies to', () => {
    expect(envOf(objects()).UPSTREAM_URL).toMatch(/^https:\/\//);
    expect(podConfig(objects()).upstreamUrl).toMatch(/^https:\/\//);
    // Past the scheme check, to reading the mounted files, which only the pod has.
    expect(() => readBackendTls(podConfig(objects()))).toThrow(/UPSTREAM_TLS_CA_FILE/);
    expect(() => readBackendTls(podConfig(objects()))).not.toThrow(/plain http/);
  });
});
