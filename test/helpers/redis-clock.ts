// Redis's own clock, set by a test: redis-server runs under libfaketime, its wall clock read from a file the test
// rewrites (frozen between writes; its monotonic clock stays real). The exact limiter takes windows and quota
// periods from Redis's TIME, so these tests move Redis's clock, not the gateway's.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const SHIM_SOURCE = join(import.meta.dirname, 'faketime-jemalloc-shim.c');

export interface RedisClock {
  /** The environment redis-server is started with. */
  env: NodeJS.ProcessEnv;
  /** Sets Redis's wall clock to `instant` (ms since the epoch, whole seconds: libfaketime's absolute format has no fraction). */
  set(instant: number): void;
  /** Removes the clock's file (after the server stopped). */
  remove(): void;
}

/** The shim (faketime-jemalloc-shim.c says why), compiled once per content into the temp directory, shared by test files. */
function shimLibrary(): string {
  const source = readFileSync(SHIM_SOURCE);
  const library = join(tmpdir(), `gateway-faketime-shim-${createHash('sha256').update(source).digest('hex').slice(0, 12)}.so`);
  if (existsSync(library)) return library;
  const building = `${library}.${process.pid}.tmp`;
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', building, SHIM_SOURCE, '-ldl'], { stdio: 'pipe' });
  // Renamed into place: a test file in another worker never loads a half-written library.
  renameSync(building, library);
  return library;
}

function timestamp(instant: number): string {
  if (instant % 1000 !== 0) throw new Error(`Redis's clock is set in whole seconds; ${new Date(instant).toISOString()} is not`);
  return new Date(instant).toISOString().slice(0, 19).replace('T', ' ');
}

/** A clock file at `instant`, and the environment that makes redis-server read its wall clock from it. */
export function redisClock(instant: number): RedisClock {
  if (!existsSync(LIBFAKETIME)) throw new Error(`${LIBFAKETIME} is missing: install the faketime package`);
  const dir = mkdtempSync(join(tmpdir(), 'gateway-redis-clock-'));
  const file = join(dir, 'now');
  const set = (at: number): void => writeFileSync(file, `${timestamp(at)}\n`);
  set(instant);
  return {
    env: {
      LD_PRELOAD: `${shimLibrary()} ${LIBFAKETIME}`,
      FAKETIME_TIMESTAMP_FILE: file,
      // Read the file on every call, so a rewrite moves the clock at once.
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    set,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
