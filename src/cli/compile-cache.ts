// Loaded before an operator's CLI (node --import, the npm scripts): Node's compile cache on, so the CLI's modules are stripped and compiled once, not on every call.
import { enableCompileCache } from 'node:module';

// A cache that cannot be written (a read-only file system) only leaves the start-up as slow as without one.
enableCompileCache();
