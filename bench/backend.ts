// Benchmark upstream: the sample pet store on a given port, in its own process.
//   BENCH_BACKEND_PETS=<n>: a store of n animals instead of the sample's four (pages of limit=100 need 100).
import { startSampleBackend, type Pet } from '../src/demo/sample-backend.ts';

const STATUSES = ['available', 'pending', 'sold'] as const;
const count = Number(process.env.BENCH_BACKEND_PETS ?? 0);
const pets: Pet[] = Array.from({ length: count }, (_, index) => ({
  id: index + 1,
  name: `Pet ${index + 1}`,
  categoryId: (index % 7) + 1,
  status: STATUSES[index % STATUSES.length]!,
}));
const backend = await startSampleBackend({ port: Number(process.argv[2] ?? 0), ...(count > 0 ? { pets } : {}) });
process.stdout.write(`${JSON.stringify({ port: backend.port })}\n`);
