// deploy/Dockerfile, parsed into its stages and instructions, for dockerfile.test.ts and version.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

export const DOCKERFILE = join(PROJECT_ROOT, 'deploy/Dockerfile');

export interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions, with comments dropped and continued lines joined. */
export function instructions(text: string): Instruction[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return logical
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, keyword, args] = /^\s*(\S+)\s+(.*)$/.exec(line)!;
      return { keyword: keyword!.toUpperCase(), args: args!.trim() };
    });
}

/** A build stage or the image: its FROM (base and optional `AS` name) and its instructions after FROM. */
export interface Stage {
  base: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile's stages, in order; the last one is the image. */
export function stages(all: Instruction[]): Stage[] {
  const found: Stage[] = [];
  for (const instruction of all) {
    if (instruction.keyword === 'FROM') {
      const [base, as, name, ...rest] = instruction.args.split(/\s+/);
      if (rest.length > 0 || (as !== undefined && (as.toUpperCase() !== 'AS' || name === undefined)))
        throw new Error(`FROM ${instruction.args}: expected <image> [AS <name>]`);
      found.push({ base: base!, name, instructions: [] });
    } else if (found.length === 0) throw new Error(`deploy/Dockerfile: ${instruction.keyword} before the first FROM`);
    else found.at(-1)!.instructions.push(instruction);
  }
  return found;
}

/** deploy/Dockerfile's stages, in order; the last one is the image. */
export function readDockerfile(): Stage[] {
  return stages(instructions(readFileSync(DOCKERFILE, 'utf8')));
}

/** A stage's labels (LABEL key=value …, values bare or double-quoted), later ones overriding earlier ones. */
export function labels(stage: Stage): Record<string, string> {
  const found: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'LABEL') continue;
    if (!/^(?:\s*[^\s=]+=(?:"(?:[^"\\]|\\.)*"|[^\s"]+))+\s*$/.test(args)) throw new Error(`LABEL ${args}: expected key=value pairs`);
    for (const [, key, value] of args.matchAll(/([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]+)/g)) {
      found[key!] = value!.startsWith('"') ? value!.slice(1, -1).replace(/\\(.)/g, '$1') : value!;
    }
  }
  return found;
}
