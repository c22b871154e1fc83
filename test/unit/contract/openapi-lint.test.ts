// The interface documents, the public one and the admin API's, pass Spectral's OpenAPI ruleset with no warning.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

it.each(['config/petstore.openapi.yaml', 'config/admin.openapi.yaml'])('%s lints clean', async (document) => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['node_modules/@stoplight/spectral-cli/dist/index.js', 'lint', '--fail-severity=warn', '--ruleset', '.spectral.yaml', document],
    { cwd: new URL('../../..', import.meta.url).pathname },
  );
  expect(stdout).toContain("No results with a severity of 'warn' or higher found!");
});
