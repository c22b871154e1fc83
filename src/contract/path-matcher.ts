// Resolves a request path to the operations served there, compiled once from the document's templates.
import type { Operation, PathMatch } from './operations.ts';

type Segment = { literal: string } | { param: string };

interface CompiledPath {
  segments: readonly Segment[];
  byMethod: Map<string, Operation>;
}

function compileTemplate(template: string): Segment[] {
  return template
    .split('/')
    .slice(1)
    .map((part) => {
      const param = /^\{([^{}]+)\}$/.exec(part);
      if (param) return { param: param[1]! };
      if (part.includes('{')) throw new Error(`path template ${template}: a parameter must fill a whole segment`);
      return { literal: part };
    });
}

/** Matches a raw (percent-encoded) path segment by segment: literals exactly, parameter segments decoded. */
export function createPathMatcher(operations: readonly Operation[]): (rawPath: string) => PathMatch {
  const byTemplate = new Map<string, CompiledPath>();
  for (const operation of operations) {
    let compiled = byTemplate.get(operation.pathTemplate);
    if (!compiled) {
      compiled = { segments: compileTemplate(operation.pathTemplate), byMethod: new Map() };
      byTemplate.set(operation.pathTemplate, compiled);
    }
    compiled.byMethod.set(operation.method, operation);
  }
  // Literal templates first, so `/pets/mine` would win over `/pets/{petId}` as OpenAPI requires.
  const paths = [...byTemplate.values()].sort((a, b) => countParams(a.segments) - countParams(b.segments));

  return function matchPath(rawPath) {
    const parts = rawPath.split('/').slice(1);
    for (const candidate of paths) {
      const pathParams = matchSegments(candidate.segments, parts);
      if (pathParams) return { kind: 'path', byMethod: candidate.byMethod, pathParams };
    }
    return { kind: 'none' };
  };
}

function countParams(segments: readonly Segment[]): number {
  return segments.filter((segment) => 'param' in segment).length;
}

function matchSegments(segments: readonly Segment[], parts: readonly string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!;
    const part = parts[index]!;
    if ('literal' in segment) {
      if (segment.literal !== part) return undefined;
      continue;
    }
    const value = decodePart(part);
    if (value === undefined || value === '') return undefined;
    params[segment.param] = value;
  }
  return params;
}

function decodePart(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined; // not valid UTF-8 once decoded: no operation has such a path
  }
}
