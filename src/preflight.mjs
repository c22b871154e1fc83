// npm runs this before start, demo, backend and the CLIs: the wrong Node or a missing build is one line, not a V8 or loader error.
// Plain JavaScript that any Node parses (no `node:` imports, optional chaining or top-level await), and not
// TypeScript: it must run on the old Node it refuses, and before `npm start`'s V8 flags, which Node 20
// rejects ("bad option: --invocation-count-for-turbofan") before any script of ours could say why.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** The least major version `engines.node` allows; only the `>=N` form is written there. */
function requiredMajor(range) {
  const match = /^\s*>=\s*(\d+)(\.\d+){0,2}\s*$/.exec(range || '');
  if (!match) throw new Error(`package.json engines.node should read ">=N", reads ${JSON.stringify(range)}`);
  return Number(match[1]);
}

function stop(message) {
  process.stderr.write(`${packageJson.name}: ${message}\n`);
  process.exit(1);
}

const required = requiredMajor(packageJson.engines?.node);
const found = Number(process.versions.node.split('.')[0]);
if (found < required) {
  stop(
    'Node ' +
      required +
      ' or later is required, found Node ' +
      process.version +
      ' (' +
      process.execPath +
      '): ' +
      'install Node ' +
      required +
      ' (.nvmrc) and put it first on PATH',
  );
}

// `preflight.mjs dist/main.js`: the entry point npm start runs, built by `npm run build`. Not built here on
// the operator's behalf: a production install has pruned the compiler (npm prune --omit=dev).
const entry = process.argv[2];
if (entry !== undefined && !existsSync(join(root, entry))) {
  stop(`${entry} does not exist: run \`npm run build\` first (it compiles src/ to dist/, with the dev dependencies installed)`);
}
