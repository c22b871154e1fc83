// undici ships no types for its module files, only for its index. The Pool module's class is the index's
// Pool, but without the index's mixin (index.js assigns request, stream, pipeline, connect and upgrade to
// Dispatcher.prototype), so those methods are left out of the type: dispatch() and the pool's own remain.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  type PoolWithoutApi = Omit<Pool, 'request' | 'stream' | 'pipeline' | 'connect' | 'upgrade'>;
  const PoolModule: new (...args: ConstructorParameters<typeof Pool>) => PoolWithoutApi;
  export default PoolModule;
}
