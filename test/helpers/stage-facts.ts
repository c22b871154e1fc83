// The stages' facts of a request no stage has run for yet, as the record is made with them.
import type { StageFacts } from '../../src/tracing/request-spans.ts';

/** A fresh object each call: tests write a request's facts into it. */
export function noStageFacts(): StageFacts {
  return {
    authStartMs: 0,
    authEndMs: 0,
    keyCache: undefined,
    lookupStartMs: 0,
    lookupEndMs: 0,
    lookupError: undefined,
    authResult: undefined,
    rateLimitStartMs: 0,
    rateLimitEndMs: 0,
    rateLimitOutcome: undefined,
    rateLimitWaitedForRedis: false,
    rateLimitStoreError: undefined,
    onStoreError: undefined,
    exchangeStartMs: 0,
    exchangeEndMs: 0,
    exchangeMethod: '',
    exchangeOrigin: undefined,
    exchangePath: '',
  };
}
