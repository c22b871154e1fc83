// Benchmark upstream: the sample pet store on a given port, in its own process.
import { startSampleBackend } from '../src/demo/sample-backend.ts';

const backend = await startSampleBackend({ port: Number(process.argv[2] ?? 0) });
process.stdout.write(`${JSON.stringify({ port: backend.port })}\n`);
