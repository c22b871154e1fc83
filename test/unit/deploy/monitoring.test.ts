// deploy/kubernetes/monitoring renders the PrometheusRule and dashboard ConfigMaps from the only copies of their sources, unchanged.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import type { IConfigMap } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { PROJECT_ROOT } from '../../helpers/start-gateway-process.ts';
import { find, KUBERNETES_DIR, kustomize, validateObject, type KubeObject } from './kustomize.ts';

const ALERTS = join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml');
const DASHBOARDS = join(PROJECT_ROOT, 'grafana/dashboards');
const dashboardFiles = readdirSync(DASHBOARDS).filter((file) => file.endsWith('.json')).sort();

describe('deploy/kubernetes/monitoring', () => {
  let rendered: KubeObject[] | undefined;
  const objects = () => (rendered ??= kustomize(join(KUBERNETES_DIR, 'monitoring'), { plugins: true }));
  const configMaps = () => objects().filter((object): object is KubeObject & IConfigMap => object.kind === 'ConfigMap');

  it('renders one PrometheusRule and one ConfigMap per dashboard, in the monitoring namespace', () => {
    expect(objects().map((object) => `${object.kind}/${object.metadata.name}`).sort()).toEqual([
      ...dashboardFiles.map((file) => `ConfigMap/petstore-${file.replace(/\.json$/, '')}`),
      'PrometheusRule/petstore-gateway',
    ]);
    expect(new Set(objects().map((object) => object.metadata.namespace))).toEqual(new Set(['monitoring']));
  });

  it('holds only objects valid against their schemas', () => {
    for (const object of objects()) expect(() => validateObject(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
  });

  it('gives the PrometheusRule exactly the groups of deploy/prometheus/alerts.yaml', () => {
    const rule = find<IPrometheusRule>(objects(), 'PrometheusRule', 'petstore-gateway');
    expect(rule.spec).toEqual(parseYaml(readFileSync(ALERTS, 'utf8')));
  });

  it.each(dashboardFiles)('holds %s byte for byte, labelled for the Grafana dashboard sidecar', (file) => {
    const configMap = find<IConfigMap>(configMaps(), 'ConfigMap', `petstore-${file.replace(/\.json$/, '')}`);
    expect(configMap.metadata!.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(configMap.data).toEqual({ [file]: readFileSync(join(DASHBOARDS, file), 'utf8') });
  });
});

describe('the exec generators in deploy/kubernetes/plugins', () => {
  const work = mkdtempSync(join(tmpdir(), 'generators-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** A kustomization in `work` with one generator of `kind` whose arguments are `args`; returns what it renders. */
  function generate(kind: string, args: string): KubeObject[] {
    const dir = mkdtempSync(join(work, 'kustomization-'));
    writeFileSync(join(dir, 'generator.yaml'), `apiVersion: petstore-gateway/v1\nkind: ${kind}\nmetadata:\n  name: fixture\nargsOneLiner: ${args}\n`);
    writeFileSync(join(dir, 'kustomization.yaml'), 'generators:\n  - generator.yaml\n');
    return kustomize(dir, { plugins: true });
  }

  it('keep every byte of a dashboard: trailing newlines or none, leading spaces, tabs, quotes, backslashes, non-ASCII', () => {
    const dir = join(work, 'dashboards');
    mkdirSync(dir);
    const files: Record<string, string> = {
      'no-final-newline.json': '{"a": 1}',
      'one-final-newline.json': '{\n  "a": "x"\n}\n',
      'blank-lines-at-end.json': '{"a": 1}\n\n\n',
      'indented-first-line.json': '    {\n\t"a": "tab\\t, quote \\" and backslash \\\\",\n  "b": "héllo — ✓"\n}\n',
      'blank-lines-inside.json': '{\n\n  "a": 1\n\n}',
    };
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
    const data = Object.fromEntries(generate('GrafanaDashboardConfigMaps', `fixture ${dir}`).map((object) => Object.entries((object as IConfigMap).data!)[0]!));
    expect(data).toEqual(files);
  });

  it('give a PrometheusRule the rule file\'s exact structure, block scalars and comments included', () => {
    const file = join(work, 'rules.yaml');
    const text = [
      '# a comment',
      'groups:',
      '  - name: g',
      '    rules:',
      '      - alert: A',
      '        expr: |',
      '          up',
      '',
      '            == 0',
      '        annotations:',
      '          kept: |+',
      '            text',
      '',
      '',
    ].join('\n');
    writeFileSync(file, text);
    const [rule] = generate('PrometheusRuleFromFile', `fixture-rule ${file}`) as Array<KubeObject & IPrometheusRule>;
    expect(rule!.metadata).toEqual({ name: 'fixture-rule' });
    expect(rule!.spec).toEqual(parseYaml(text));
  });

  it('refuse a rule file with a document marker, which would end the spec early', () => {
    const file = join(work, 'two-documents.yaml');
    writeFileSync(file, 'groups: []\n---\ngroups: []\n');
    expect(() => generate('PrometheusRuleFromFile', `fixture ${file}`)).toThrow(/document marker/);
  });
});
