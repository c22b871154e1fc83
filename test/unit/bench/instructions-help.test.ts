// node bench/instructions.ts --help prints what it counts and its options, without valgrind or a build.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-keys-cli.ts';

describe('bench/instructions.ts', () => {
  it('prints its options for --help and exits 0', async () => {
    const result = await runCli('bench/instructions.ts', ['--help'], {});
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Instructions per request, counted/);
    expect(result.stdout).toContain('node bench/instructions.ts [variant...]');
    expect(result.stdout).toContain('INSTRUCTIONS_ROUNDS');
  });

  it('refuses an option it does not know as a usage error', async () => {
    const result = await runCli('bench/instructions.ts', ['--rounds=5'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^bench\/instructions\.ts: unknown option --rounds=5\n/);
  });
});
