// Renders deploy/kubernetes with the real `kubectl kustomize` and checks every object against its Kubernetes schema.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

export const KUBERNETES_DIR = join(PROJECT_ROOT, 'deploy/kubernetes');

/** A rendered object, as kubectl would send it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/**
 * `kubectl kustomize DIR`, parsed: plain, with no flags and no plugins, as Argo CD, Flux and
 * `kubectl apply -k` render. Throws with kubectl's own message when the render fails, and with
 * an instruction when kubectl is not installed: these tests must never pass without rendering.
 */
export function kustomize(dir: string): KubeObject[] {
  const args = ['kustomize', dir];
  let output: string;
  try {
    output = execFileSync('kubectl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    if (failure.code === 'ENOENT') {
      throw new Error(
        'kubectl is not on PATH: the deployment tests render the manifests with `kubectl kustomize`. Install kubectl (it includes kustomize) and run them again.',
        {
          cause: error,
        },
      );
    }
    throw new Error(`kubectl ${args.join(' ')} failed:\n${failure.stderr ?? failure.message}`, { cause: error });
  }
  return parseAllDocuments(output).map((document) => document.toJS() as KubeObject);
}

type Validating = new (data: never) => { validate(): void };

/** The model each kind is checked with: types, required fields and enums (not unknown fields). */
const MODELS: Record<string, Validating> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

/** Validates one object with kubernetes-models; an apiVersion and kind without a model is an error too. */
export function validateObject(object: KubeObject): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`no schema to check ${object.apiVersion} ${object.kind} ${object.metadata.name} against`);
  new Model(object as never).validate();
}

/** The one object of this kind and name; throws when there is none or several. */
export function find<T = KubeObject>(objects: readonly KubeObject[], kind: string, name: string): T {
  const matches = objects.filter((object) => object.kind === kind && object.metadata.name === name);
  if (matches.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${matches.length}`);
  return matches[0] as T;
}
