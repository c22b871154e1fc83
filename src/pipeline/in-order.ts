// Runs stages in order as one Express middleware: the app's entry, and each version's pipeline.
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** What a stage's second call of its `next` throws, in hono's words. */
export const NEXT_CALLED_TWICE = 'next() called multiple times';

/**
 * Express middlewares with Express's contract, run in a plain loop: mounted one by one on a Router, each would cost a path match,
 * a prefix trim and a `next` closure per request (a fifth of what the gateway allocated). Errors go to the error handler as the
 * Router would send them. A second call of a stage's `next` throws, as hono's compose does, rather than run the later stages twice.
 */
export function inOrder(stages: readonly RequestHandler[]): RequestHandler {
  return function runStages(req: Request, res: Response, done: NextFunction): void {
    /** The position the pipeline went on to last: a `next` leading there or before was already called. */
    let reached = -1;
    // Each stage gets a `next` of its own (one small closure per stage run): a single shared one could
    // not tell a stage's second call from the following stage's first.
    const goOnTo =
      (position: number) =>
      (error?: unknown): void => {
        if (position <= reached) throw new Error(NEXT_CALLED_TWICE);
        reached = position;
        if (error !== undefined && error !== null) {
          done(error);
          return;
        }
        const stage = stages[position];
        if (stage === undefined) {
          done();
          return;
        }
        try {
          const result: unknown = stage(req, res, goOnTo(position + 1));
          if (result instanceof Promise) result.catch(done);
        } catch (thrown) {
          done(thrown);
        }
      };
    goOnTo(0)();
  };
}
