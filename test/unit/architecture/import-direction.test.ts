// Imports point one way: no two folders of src/ import each other, however indirectly.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../../src');

/** A folder of src/, or a file at its top (main.ts and app.ts sit at different ends of the graph). */
function layerOf(file: string): string {
  const path = relative(SRC, file);
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash);
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Layer → the layers its files import from (relative imports inside src/ only). */
function layerGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const from = layerOf(file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/\bfrom '(\.{1,2}\/[^']+)'/g)) {
      const target = normalize(join(dirname(file), specifier!));
      if (relative(SRC, target).startsWith('..')) continue;
      const to = layerOf(target);
      if (to !== from) graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
  }
  return graph;
}

/** Every pair of layers that reach each other, as `a -> b -> ... -> a`. */
function cycles(graph: Map<string, Set<string>>): string[] {
  const found: string[] = [];
  for (const [start, targets] of graph) {
    for (const next of targets) {
      const path = pathBetween(graph, next, start);
      if (path) found.push([start, ...path].join(' -> '));
    }
  }
  return found;
}

function pathBetween(graph: Map<string, Set<string>>, from: string, to: string): string[] | undefined {
  const previous = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const node = queue.shift()!;
    if (node === to) {
      const path = [node];
      for (let step = node; step !== from; step = previous.get(step)!) path.unshift(previous.get(step)!);
      return path;
    }
    for (const next of graph.get(node) ?? []) {
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** File → the files of the same folder it imports, type-only imports included (a type circle is a circle too). */
function fileGraph(folder: string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(folder)) {
    const from = relative(folder, file);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/\bfrom '(\.{1,2}\/[^']+)'/g)) {
      const to = relative(folder, normalize(join(dirname(file), specifier!)));
      if (!to.startsWith('..')) graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
  }
  return graph;
}

describe('the layers of src/', () => {
  it('import each other one way only', () => {
    expect(cycles(layerGraph())).toEqual([]);
  });

  it('keep the protocol vocabulary (src/http) free of the gateway: it imports no other layer', () => {
    expect([...(layerGraph().get('http') ?? [])]).toEqual([]);
  });

  it('keep the forks (src/forks) leaves: they import no other layer, and are called like libraries', () => {
    expect([...(layerGraph().get('forks') ?? [])]).toEqual([]);
  });

  it('keep the stages (src/auth, src/policy, src/limits, src/proxy) unaware of tracing: it reads their facts from the record', () => {
    const graph = layerGraph();
    expect(['auth', 'policy', 'limits', 'proxy'].filter((stage) => graph.get(stage)?.has('tracing'))).toEqual([]);
  });

  it('keep the listener edge (src/server) below the composition root: it imports neither wiring nor the pipeline stages', () => {
    const imports = layerGraph().get('server') ?? new Set();
    expect([...imports].filter((layer) => ['wiring', 'app.ts', 'main.ts', 'proxy', 'policy', 'limits', 'contract'].includes(layer))).toEqual([]);
  });

  it('keep the files of the exchange (src/proxy) importing each other one way, types included', () => {
    const graph = fileGraph(join(SRC, 'proxy'));
    expect(graph.get('exchange.ts')?.has('relay-handler.ts')).toBe(true);
    expect(cycles(graph)).toEqual([]);
  });
});
