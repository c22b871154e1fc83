// What each request allocates, by the function that allocated it: each variant's gateway (started as
// `npm run bench` starts them, one at a time, pinned to core 0) runs with V8's sampling heap profiler
// (bench/heap-sampling.ts) while `wrk -c50` saturates it for ALLOCATIONS_DURATION_S (default 6) after a
// 6 s warm-up. Everything allocated is counted, collected or not, so the figure is what the garbage
// collector has to clear: bytes a request, then the functions that allocate most, then (from the second
// variant on) where it differs from the first. Allocation is charged to the innermost JavaScript frame: a
// change of code path can move bytes between a function and its callee, so read totals before rows.
//   node bench/allocations.ts [variant...]   variants as bench/gateway-variants.ts reads them (default: off traced)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseVariants, startBench, wrk } from './gateway-variants.ts';

const DURATION_S = Number(process.env.ALLOCATIONS_DURATION_S ?? 6);
const ROWS = Number(process.env.ALLOCATIONS_ROWS ?? 25);
const PRELOAD = fileURLToPath(new URL('heap-sampling.ts', import.meta.url));

/** A node of V8's sampling heap profile (the Chrome DevTools protocol's SamplingHeapProfileNode). */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Bytes a request by function (name, then module and line, shortened to the package or the build's path). */
function bytesByFunction(head: ProfileNode, requests: number): Map<string, number> {
  const byFunction = new Map<string, number>();
  const visit = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.replace(/^.*node_modules\//, '').replace(/^.*\/(dist|bench|src)\//, '$1/');
    const name = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    if (node.selfSize > 0) byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize / requests);
    for (const child of node.children) visit(child);
  };
  visit(head);
  return byFunction;
}

const sum = (values: Iterable<number>) => [...values].reduce((total, value) => total + value, 0);
const bytes = (value: number) => value.toFixed(0).padStart(7);

const variants = parseVariants(process.argv.slice(2));
const bench = await startBench();
try {
  const profiles: Map<string, number>[] = [];
  for (const [index, variant] of variants.entries()) {
    const out = join(bench.workDir, `allocations-${index}.json`);
    const { child, url } = await bench.launch(
      { ...variant, extra: { ...variant.extra, HEAP_SAMPLING_OUT: out } },
      { name: `allocations-${index}`, cpu: '0', nodeFlags: ['--import', PRELOAD], warmS: 6 },
    );
    child.kill('SIGUSR2');
    const requests = await wrk(url, bench.key, DURATION_S);
    child.kill('SIGUSR2');
    for (let waited = 0; !existsSync(out); waited += 100) {
      if (waited > 10_000) throw new Error(`${variant.spec}: no heap profile written (see ${bench.workDir})`);
      await sleep(100);
    }
    await bench.stop([child]);
    const profile = JSON.parse(readFileSync(out, 'utf8')) as { head?: ProfileNode; error?: string };
    if (profile.head === undefined) throw new Error(`${variant.spec}: ${profile.error}`);
    const byFunction = bytesByFunction(profile.head, requests);
    profiles.push(byFunction);
    process.stdout.write(`\n${variant.spec}: ${requests} requests, ${sum(byFunction.values()).toFixed(0)} bytes allocated a request (sampled)\n`);
    for (const [name, size] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, ROWS)) process.stdout.write(`${bytes(size)}  ${name}\n`);
    if (index === 0) continue;
    const first = profiles[0]!;
    const differences = [...new Set([...first.keys(), ...byFunction.keys()])]
      .map((name) => [name, (byFunction.get(name) ?? 0) - (first.get(name) ?? 0)] as const)
      .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
    process.stdout.write(
      `${variant.spec} against ${variants[0]!.spec}: ${(sum(byFunction.values()) - sum(first.values())).toFixed(0)} bytes a request; largest differences:\n`,
    );
    for (const [name, difference] of differences.slice(0, ROWS))
      process.stdout.write(`${difference >= 0 ? '+' : '-'}${bytes(Math.abs(difference)).slice(1)}  ${name}\n`);
  }
} finally {
  bench.close();
}
