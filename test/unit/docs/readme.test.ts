// README.md's feature list names every capability with a link to where it is explained, and stays short.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { linksOf } from '../../helpers/markdown.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

const README = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
const FEATURES = README.slice(README.indexOf('## Features'), README.indexOf('\n## ', README.indexOf('## Features') + 1));

/** Each capability an operator or a client may look for, and the section the README sends them to. */
const CAPABILITIES: Record<string, string> = {
  quotas: 'docs/operations.md#quotas',
  'usage reports': 'docs/operations.md#usage-per-consumer',
  'admin API': 'docs/operations.md#managing-keys-over-http',
  'export and import': 'docs/operations.md#persistence-backup-and-restore',
  tracing: 'docs/reference.md#tracing',
  'contract drift': 'docs/operations.md#backend-contract-drift',
  'shadow traffic': 'docs/operations.md#shadow-traffic',
  TLS: 'docs/configuration.md#https-on-the-listeners',
  brownouts: 'docs/operations.md#brownouts-and-who-still-calls',
  'rate limits': 'docs/reference.md#rate-limits',
  'signed identity': 'docs/identity.md',
  Kubernetes: 'docs/kubernetes.md',
};

describe('README.md features', () => {
  it.each(Object.entries(CAPABILITIES))('names %s with a link to %s', (_capability, target) => {
    expect(linksOf(FEATURES)).toContain(target);
  });

  it('stays short: one bullet per capability, none over four lines', () => {
    const bullets = FEATURES.split('\n- ').slice(1);
    expect(bullets.length).toBeLessThanOrEqual(20);
    for (const bullet of bullets) expect(bullet.trim().split('\n').length, bullet).toBeLessThanOrEqual(4);
  });
});
