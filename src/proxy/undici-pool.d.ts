// undici ships no types for its module files, only for its index: the Pool module's export is the index's Pool.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const PoolClass: typeof Pool;
  export default PoolClass;
}
