// Preloaded (`--import`) into a gateway by bench/allocations.ts: V8's sampling heap profiler, counting what is
// allocated whether or not a collection has freed it since, started by the first SIGUSR2 and stopped by the
// second, which writes the profile to HEAP_SAMPLING_OUT. Nothing happens until the first signal.
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/** One sample per this many bytes allocated, on average (V8's default is 32 KiB; a request allocates about 40). */
const SAMPLING_INTERVAL_BYTES = 512;

const out = process.env.HEAP_SAMPLING_OUT;
if (out !== undefined) {
  const session = new Session();
  session.connect();
  let sampling = false;
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      session.post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_INTERVAL_BYTES,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      return;
    }
    session.post('HeapProfiler.stopSampling', (error, result) => {
      // Written aside, then renamed: the bench reads the file as soon as it exists.
      writeFileSync(`${out}.partial`, error === null ? JSON.stringify(result.profile) : JSON.stringify({ error: String(error) }));
      renameSync(`${out}.partial`, out);
    });
  });
}
