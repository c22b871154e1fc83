// npm run backend: the sample pet store alone, on PORT (default 4010), for trying the gateway against it.
import { startupFailureMessage } from '../startup-failure.ts';
import { startSampleBackend } from './sample-backend.ts';

const port = Number(process.env.PORT ?? 4010);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  process.stderr.write(`backend: PORT must be a port number, not ${JSON.stringify(process.env.PORT)}\n`);
  process.exit(2);
}

const backend = await startSampleBackend({ port, portSetting: 'PORT' }).catch((error: unknown) => {
  process.stderr.write(`backend: could not start: ${startupFailureMessage(error)}\n`);
  process.exit(1);
});
process.stdout.write(`Sample pet store backend on ${backend.baseUrl}\nUse it as the gateway's UPSTREAM_URL. Ctrl-C stops it.\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    backend.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
