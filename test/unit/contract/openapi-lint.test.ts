// The interface document passes Spectral's OpenAPI ruleset with no warning.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it('config/petstore.openapi.yaml lints clean', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['node_modules/@stoplight/spectral-cli/dist/index.js', 'lint', '--fail-severity=warn', '--ruleset', '.spectral.yaml', 'config/petstore.openapi.yaml'],
    { cwd: new URL('../../..', import.meta.url).pathname },
  );
  expect(stdout).toContain("No results with a severity of 'warn' or higher found!");
});
