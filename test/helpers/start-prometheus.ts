// A private Prometheus (from Debian) on a free loopback port, scraping the given targets every second.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/start-gateway-process.ts';
import { freshPorts } from '../../support/start-upstream.ts';

export interface PrivatePrometheus {
  url: string;
  /** The exemplars Prometheus kept for `expr`'s series over the last `seconds` (its exemplar storage is on). */
  exemplars(expr: string, seconds: number): Promise<Array<{ seriesLabels: Record<string, string>; exemplars: Array<{ labels: Record<string, string> }> }>>;
  /** Runs an instant query; returns the result vector. */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

export async function startPrometheus(targets: string[], jobName: string): Promise<PrivatePrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-prometheus-'));
  const [port] = (await freshPorts(1)) as [number];
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: ${jobName}\n    static_configs:\n      - targets: [${targets.map((target) => `'${target}'`).join(', ')}]\n`,
  );
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // As the docs ask operators to run it for the latency panels' links to traces.
      '--enable-feature=exemplar-storage',
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200, 20_000, 100);
  } catch (error) {
    // Not left running when it never got ready: the caller has nothing to stop.
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    async exemplars(expr, seconds) {
      const now = Date.now() / 1000;
      const res = await fetch(`${url}/api/v1/query_exemplars?${new URLSearchParams({ query: expr, start: String(now - seconds), end: String(now) })}`);
      const body = (await res.json()) as { status: string; error?: string; data?: unknown };
      if (body.status !== 'success') throw new Error(`exemplar query failed: ${body.error} — ${expr}`);
      return body.data as Array<{ seriesLabels: Record<string, string>; exemplars: Array<{ labels: Record<string, string> }> }>;
    },
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: unknown } };
      if (body.status !== 'success') throw new Error(`query failed: ${body.error} — ${expr}`);
      const result = body.data!.result;
      return (body.data!.resultType === 'scalar' ? [{ metric: {}, value: result }] : result) as Array<{
        metric: Record<string, string>;
        value: [number, string];
      }>;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
