// The Kubernetes manifests are valid objects, and agree with the gateway's ports, probes and shutdown timing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../../src/config/load-config.ts';
import { PROJECT_ROOT } from '../../helpers/start-gateway-process.ts';

const base = join(PROJECT_ROOT, 'deploy/kubernetes/base');
const load = (file: string) => parseAllDocuments(readFileSync(join(base, file), 'utf8')).map((doc) => doc.toJS() as Record<string, unknown>);

describe('deploy/kubernetes/base', () => {
  const [deploymentDoc] = load('deployment.yaml');
  const deployment = new Deployment(deploymentDoc as ConstructorParameters<typeof Deployment>[0]);

  it('holds valid objects', () => {
    expect(() => deployment.validate()).not.toThrow();
    for (const doc of load('service.yaml')) expect(() => new Service(doc as ConstructorParameters<typeof Service>[0]).validate()).not.toThrow();
    for (const doc of load('pod-disruption-budget.yaml')) {
      expect(() => new PodDisruptionBudget(doc as ConstructorParameters<typeof PodDisruptionBudget>[0]).validate()).not.toThrow();
    }
  });

  it('probes the admin listener\'s /readyz and /healthz on the configured admin port', () => {
    const config = loadConfig({});
    const container = deployment.spec!.template.spec!.containers[0]!;
    expect(container.ports).toEqual([
      { name: 'http', containerPort: config.listen.port },
      { name: 'admin', containerPort: config.listen.adminPort },
    ]);
    expect(container.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(container.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: 'admin' });
  });

  it('gives the gateway time to drain before the kubelet kills it', () => {
    const config = loadConfig({});
    const budgetMs = config.shutdown.drainDelayMs + config.shutdown.gracePeriodMs;
    expect(deployment.spec!.template.spec!.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(budgetMs);
  });

  it('names only environment variables the gateway reads', () => {
    const container = deployment.spec!.template.spec!.containers[0]!;
    const known = ['GATEWAY_ENVIRONMENT', 'REDIS_URL', 'API_KEY_PEPPER_FILE', 'LOG_LEVEL'];
    expect(container.env!.map((variable) => variable.name)).toEqual(known);
  });
});
