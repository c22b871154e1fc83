// Each overlay renders with `kubectl kustomize` into valid objects that agree with the gateway's ports, probes, settings and shutdown timing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import type { INetworkPolicy, INetworkPolicyPeer, INetworkPolicyPort } from 'kubernetes-models/networking.k8s.io/v1';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import type { IContainer, IPodSpec, IService, IServiceAccount } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import packageJson from '../../../package.json' with { type: 'json' };
import { ENV_KEYS, loadConfig } from '../../../src/config/load-config.ts';
import { redisTopology } from '../../../src/redis/connect.ts';
import { START_ARGS } from '../../../support/start-gateway-process.ts';
import { find, KUBERNETES_DIR, kustomize, validateObject, type KubeObject } from './kustomize.ts';

const NAME = 'petstore-gateway';

/** What differs between the environments; everything else must be the same in both. */
const OVERLAYS = [
  { environment: 'production', replicas: { min: 3, max: 12 }, zoneSpread: 'DoNotSchedule', redis: 'sentinel', redisPorts: [6379, 26379] },
  { environment: 'staging', replicas: { min: 2, max: 4 }, zoneSpread: 'ScheduleAnyway', redis: 'standalone', redisPorts: [6379] },
] as const;

/** Variables the gateway reads beyond the config keys of ENV_KEYS (src/auth/pepper.ts, src/config/load-config.ts). */
const OTHER_ENV = ['API_KEY_PEPPER', 'GATEWAY_CONFIG'];

/** Stand-ins for the values that come from the secret, to load the configuration a pod would get. */
const SECRET_VALUES: Record<string, string> = { 'redis-url': 'redis://redis:6379', 'redis-password': 'a-redis-password' };

const config = loadConfig({});

/** A resource quantity (`1`, `500m`, `512Mi`, `1Gi`) as a number of `divisor` (`1m`, or `1` when absent): what the Downward API sets. */
function quantityIn(quantity: string, divisor = '1'): number {
  const units: Record<string, number> = { '': 1, m: 0.001, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  const value = (text: string) => {
    const match = /^(\d+)(m|Ki|Mi|Gi)?$/.exec(text);
    if (match === null) throw new Error(`unexpected quantity ${text}`);
    return Number(match[1]) * units[match[2] ?? '']!;
  };
  // Kubernetes rounds up to a whole number of the divisor.
  return Math.ceil(value(quantity) / value(divisor));
}

/**
 * Every way the rendered objects ask Prometheus to scrape: ServiceMonitors and PodMonitors (Prometheus
 * Operator), and objects or pod templates annotated prometheus.io/… (annotation-based discovery).
 */
function scrapeWays(objects: readonly KubeObject[]): string[] {
  return objects.flatMap((object) => {
    const ways: string[] = [];
    if (object.kind === 'ServiceMonitor' || object.kind === 'PodMonitor') ways.push(`${object.kind}/${object.metadata.name}`);
    const template = (object as { spec?: { template?: { metadata?: { annotations?: Record<string, string> } } } }).spec?.template;
    for (const [where, annotations] of [
      ['', object.metadata.annotations],
      [' pod template', template?.metadata?.annotations],
    ] as const) {
      if (Object.keys(annotations ?? {}).some((key) => key.startsWith('prometheus.io/')))
        ways.push(`${object.kind}/${object.metadata.name}${where} prometheus.io annotations`);
    }
    return ways;
  });
}

describe.each(OVERLAYS)('deploy/kubernetes/overlays/$environment', (overlay) => {
  const namespace = `petstore-${overlay.environment}`;
  let rendered: KubeObject[] | undefined;
  /** Rendered on first use, so a missing kubectl fails every test with kubectl's absence as the reason. */
  const objects = () => (rendered ??= kustomize(join(KUBERNETES_DIR, 'overlays', overlay.environment)));
  const deployment = () => find<IDeployment>(objects(), 'Deployment', NAME);
  const pod = (): IPodSpec => deployment().spec!.template.spec!;
  const gateway = (): IContainer => pod().containers.find((container) => container.name === 'gateway')!;
  const podLabels = () => deployment().spec!.template.metadata!.labels!;
  /** The gateway's environment as the pod gets it: stand-ins for the secret's values, the Downward API's resources. */
  const podEnv = (): Record<string, string | undefined> =>
    Object.fromEntries(
      gateway().env!.map((variable) => {
        const field = variable.valueFrom?.resourceFieldRef;
        if (field) {
          const [kind, resource] = field.resource.split('.') as ['requests' | 'limits', 'cpu' | 'memory'];
          return [
            variable.name,
            String(quantityIn(String(gateway().resources![kind]![resource]), field.divisor === undefined ? undefined : String(field.divisor))),
          ];
        }
        return [variable.name, variable.value ?? SECRET_VALUES[variable.valueFrom!.secretKeyRef!.key]];
      }),
    );

  it('renders the gateway, its services, identity, budget, autoscaler, network policy and scrape config, in its namespace', () => {
    expect(
      objects()
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort(),
    ).toEqual([
      `Deployment/${NAME}`,
      `HorizontalPodAutoscaler/${NAME}`,
      `NetworkPolicy/${NAME}`,
      `PodDisruptionBudget/${NAME}`,
      `Service/${NAME}`,
      `Service/${NAME}-admin`,
      `ServiceAccount/${NAME}`,
      `ServiceMonitor/${NAME}`,
    ]);
    expect(new Set(objects().map((object) => object.metadata.namespace))).toEqual(new Set([namespace]));
  });

  it('holds only objects valid against their schemas', () => {
    for (const object of objects()) expect(() => validateObject(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
  });

  it('runs the image named by the overlay, not the base placeholder', () => {
    expect(gateway().image).toBe(`ghcr.io/petstore/gateway:${packageJson.version}`);
  });

  it('exposes the configured ports and probes /readyz and /healthz on the admin port', () => {
    expect(gateway().ports).toEqual([
      { name: 'http', containerPort: config.listen.port },
      { name: 'admin', containerPort: config.listen.adminPort },
    ]);
    expect(gateway().readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(gateway().livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'admin' });
  });

  it('runs every container as a non-root user on a read-only root filesystem, without privileges', () => {
    const spec = pod();
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(spec.securityContext!.runAsUser).toBeGreaterThan(0);
    for (const container of [...(spec.initContainers ?? []), ...spec.containers]) {
      expect(container.securityContext, container.name).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
    }
  });

  it('runs under its own service account, without an API token', () => {
    const account = find<IServiceAccount>(objects(), 'ServiceAccount', pod().serviceAccountName!);
    expect(account.automountServiceAccountToken).toBe(false);
    expect(pod().automountServiceAccountToken).toBe(false);
  });

  it('gives the gateway time to drain before the kubelet kills it', () => {
    const budgetMs = config.shutdown.drainDelayMs + config.shutdown.gracePeriodMs;
    expect(pod().terminationGracePeriodSeconds! * 1000).toBeGreaterThan(budgetMs);
  });

  it('requests one core and the loaded working set, and limits memory to twice that', () => {
    expect(gateway().resources).toEqual({ requests: { cpu: '1', memory: '256Mi' }, limits: { cpu: '2', memory: '512Mi' } });
  });

  it("starts node with the old-generation cap Node derives inside the pod's memory limit (half of it, at 512Mi)", () => {
    // The image runs START_ARGS (dockerfile.test.ts); a limit changed alone would leave the heap sized for the old one.
    // Half holds between V8's floor (256 MB) and its ceiling (4 GB); outside them, see V8's HeapSizeFromPhysicalMemory.
    const limit = String(gateway().resources!.limits!.memory);
    const quantity = /^(\d+)(Mi|Gi)$/.exec(limit);
    if (quantity === null) throw new Error(`memory limit ${limit}: expected a quantity in Mi or Gi`);
    const limitMiB = Number(quantity[1]) * (quantity[2] === 'Gi' ? 1024 : 1);
    expect(START_ARGS).toContain(`--max-old-space-size=${limitMiB / 2}`);
  });

  it('names only environment variables the gateway reads', () => {
    const known = [...Object.keys(ENV_KEYS), ...OTHER_ENV];
    for (const variable of gateway().env!) expect(known, variable.name).toContain(variable.name);
  });

  it(`configures the ${overlay.environment} gateway, with ${overlay.redis} Redis`, () => {
    const env = podEnv();
    const podConfig = loadConfig(env);
    expect(podConfig.environment).toBe(overlay.environment);
    expect(redisTopology(podConfig.redis)).toBe(overlay.redis);
  });

  it("tells the gateway its container's CPU request and memory limit (the saturation gauges), from the Downward API", () => {
    const refs = gateway().env!.flatMap((variable) => (variable.valueFrom?.resourceFieldRef ? [variable.valueFrom.resourceFieldRef] : []));
    expect(refs.map((ref) => ref.containerName)).toEqual(['gateway', 'gateway']);
    expect(loadConfig(podEnv()).resources).toEqual({ cpuRequestMillicores: 1000, memoryLimitBytes: 512 * 1024 ** 2 });
  });

  it("opens the admin listener on the pod's interfaces, where the kubelet's probes and Prometheus connect (the gateway's default is loopback)", () => {
    const env = podEnv();
    expect(config.listen.adminHost).toBe('127.0.0.1');
    expect(loadConfig(env).listen.adminHost).toBe('0.0.0.0');
  });

  it('reads every *_FILE setting from a file of the mounted secret', () => {
    const mounts = new Map(gateway().volumeMounts!.map((mount) => [mount.name, mount.mountPath]));
    const files = pod().volumes!.flatMap((volume) => (volume.secret?.items ?? []).map((item) => `${mounts.get(volume.name)}/${item.path}`));
    const fileSettings = gateway().env!.filter((variable) => variable.name.endsWith('_FILE'));
    expect(fileSettings.map((variable) => variable.name)).toEqual(
      expect.arrayContaining(['API_KEY_PEPPER_FILE', 'UPSTREAM_IDENTITY_KEY_FILE', 'ADMIN_API_TOKEN_FILE']),
    );
    for (const variable of fileSettings) expect(files, variable.name).toContain(variable.value);
  });

  it('reads only secret keys that examples/secret.example.yaml documents', () => {
    const example = parseYaml(readFileSync(join(KUBERNETES_DIR, 'examples/secret.example.yaml'), 'utf8')) as KubeObject & {
      stringData: Record<string, string>;
    };
    expect(() => validateObject(example)).not.toThrow();
    const secretName = example.metadata.name;
    const fromEnv = gateway().env!.flatMap((variable) => (variable.valueFrom?.secretKeyRef?.name === secretName ? [variable.valueFrom.secretKeyRef.key] : []));
    const fromVolumes = pod().volumes!.flatMap((volume) => (volume.secret?.secretName === secretName ? volume.secret.items!.map((item) => item.key) : []));
    for (const key of [...fromEnv, ...fromVolumes]) expect(Object.keys(example.stringData), key).toContain(key);
  });

  it("leaves the replica count to the autoscaler, which scales on CPU within the environment's bounds", () => {
    expect(deployment().spec!.replicas).toBeUndefined();
    const hpa = find<IHorizontalPodAutoscaler>(objects(), 'HorizontalPodAutoscaler', NAME);
    expect(hpa.spec!.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: NAME });
    expect({ min: hpa.spec!.minReplicas, max: hpa.spec!.maxReplicas }).toEqual(overlay.replicas);
    expect(hpa.spec!.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }]);
  });

  it('keeps serving through voluntary disruptions: one pod at a time, never below one', () => {
    const budget = find<IPodDisruptionBudget>(objects(), 'PodDisruptionBudget', NAME);
    expect(budget.spec!.selector!.matchLabels).toEqual(podLabels());
    expect(budget.spec!.maxUnavailable).toBe(1);
    expect(overlay.replicas.min).toBeGreaterThan(1);
    expect(deployment().spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
  });

  it('spreads replicas across zones, then nodes, each rollout on its own', () => {
    const constraints = pod().topologySpreadConstraints!;
    expect(constraints.map(({ topologyKey, whenUnsatisfiable }) => ({ topologyKey, whenUnsatisfiable }))).toEqual([
      { topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: overlay.zoneSpread },
      { topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway' },
    ]);
    for (const constraint of constraints) {
      expect(constraint).toMatchObject({
        maxSkew: 1,
        nodeTaintsPolicy: 'Honor',
        matchLabelKeys: ['pod-template-hash'],
        labelSelector: { matchLabels: podLabels() },
      });
    }
  });

  describe('network policy', () => {
    const policy = () => find<INetworkPolicy>(objects(), 'NetworkPolicy', NAME);
    const namespaceNamed = (name: string): INetworkPolicyPeer => ({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': name } } });
    const podsNamed = (name: string): INetworkPolicyPeer => ({ podSelector: { matchLabels: { 'app.kubernetes.io/name': name } } });
    const tcp = (port: number | string): INetworkPolicyPort => ({ port, protocol: 'TCP' });

    it("applies to the gateway's pods, both ways", () => {
      expect(policy().spec!.podSelector).toEqual({ matchLabels: podLabels() });
      expect(policy().spec!.policyTypes).toEqual(['Ingress', 'Egress']);
    });

    it('admits the public port from the ingress namespace and the admin port from monitoring, the backend (the JWKS) and admin clients (the admin API)', () => {
      const adminClients: INetworkPolicyPeer = {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'admin-clients' } },
        podSelector: { matchLabels: { 'petstore-gateway/admin-client': 'true' } },
      };
      expect(policy().spec!.ingress).toEqual([
        { from: [namespaceNamed('ingress-nginx')], ports: [tcp('http')] },
        { from: [namespaceNamed('monitoring')], ports: [tcp('admin')] },
        { from: [podsNamed('petstore-backend')], ports: [tcp('admin')] },
        { from: [adminClients], ports: [tcp('admin')] },
      ]);
      const portNames = gateway().ports!.map((port) => port.name);
      for (const rule of policy().spec!.ingress!) for (const port of rule.ports!) expect(portNames).toContain(port.port);
    });

    it('lets the gateway reach only Redis, the backend and DNS', () => {
      const dns: INetworkPolicyPeer = {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
        podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
      };
      expect(policy().spec!.egress).toEqual([
        { to: [podsNamed('redis')], ports: overlay.redisPorts.map(tcp) },
        { to: [podsNamed('petstore-backend')], ports: [tcp(8080)] },
        { to: [dns], ports: [{ port: 53, protocol: 'UDP' }, tcp(53)] },
      ]);
    });
  });

  it("has Prometheus scrape /metrics on the admin service's port, not the public service", () => {
    const monitor = find<IServiceMonitor>(objects(), 'ServiceMonitor', NAME);
    const selected = objects().filter(
      (object): object is KubeObject & IService =>
        object.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels!).every(([key, value]) => object.metadata.labels?.[key] === value),
    );
    expect(selected.map((service) => service.metadata.name)).toEqual([`${NAME}-admin`]);
    expect(monitor.spec.endpoints).toEqual([{ port: 'admin', path: '/metrics', interval: '15s', scrapeTimeout: '10s' }]);
    expect(selected[0]!.spec!.ports).toEqual([{ name: 'admin', port: config.listen.adminPort, targetPort: 'admin' }]);
    expect(selected[0]!.spec!.selector).toEqual(podLabels());
  });

  it("is scraped one way only, the ServiceMonitor's, with no prometheus.io annotations beside it (each replica would be scraped twice)", () => {
    expect(scrapeWays(objects())).toEqual([`ServiceMonitor/${NAME}`]);
  });
});

describe('deploy/kubernetes/components/scrape-annotations, in place of the ServiceMonitor on a cluster without the Prometheus Operator', () => {
  const work = mkdtempSync(join(tmpdir(), 'scrape-annotations-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("has the pods scraped on the admin port's /metrics, by annotation only", () => {
    // kustomize takes no absolute paths: the base and component relative to the temporary overlay.
    const from = (path: string) => relative(work, join(KUBERNETES_DIR, path));
    writeFileSync(join(work, 'kustomization.yaml'), `resources:\n  - ${from('base')}\ncomponents:\n  - ${from('components/scrape-annotations')}\n`);
    const objects = kustomize(work);
    expect(scrapeWays(objects)).toEqual([`Deployment/${NAME} pod template prometheus.io annotations`]);
    const deployment = find<IDeployment>(objects, 'Deployment', NAME);
    expect(deployment.spec!.template.metadata!.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(config.listen.adminPort),
      'prometheus.io/path': '/metrics',
    });
    const admin = deployment.spec!.template.spec!.containers.find((container) => container.name === 'gateway')!.ports!.find((port) => port.name === 'admin');
    expect(admin!.containerPort).toBe(config.listen.adminPort);
  });
});
