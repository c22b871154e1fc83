// npm run backend: the sample pet store alone, on PORT, printing its base address.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';

it('is the script npm run backend runs', () => {
  const { scripts } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(scripts.backend).toBe('node src/demo/backend.ts');
});

it('listens on PORT (0: any free port), prints its base address and answers GET /v1/pets', async () => {
  const child = spawn(process.execPath, ['src/demo/backend.ts'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  try {
    let output = '';
    for await (const chunk of child.stdout) {
      output += String(chunk);
      if (output.includes('\n')) break;
    }
    const [, port] = /^Sample pet store backend on http:\/\/127\.0\.0\.1:(\d+)\/v1$/.exec(output.split('\n')[0]!) ?? [];
    expect(Number(port)).toBeGreaterThan(0);

    const res = await fetch(`http://127.0.0.1:${port}/v1/pets?limit=2`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual([
      { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
      { id: 2, name: 'Mittens', categoryId: 2, status: 'pending' },
    ]);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toEqual([0, null]);
});
