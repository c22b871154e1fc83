// Runs stages in order as one Express middleware: the app's entry, and each version's pipeline.
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * The stages are Express middlewares, and each keeps Express's contract: call `next()` to go on, or
 * throw, reject or call `next(error)` to refuse. Mounted one by one on a Router, each would cost a
 * path match, a prefix trim and a `next` closure per request: measured, a fifth of what the gateway
 * allocates per request. None of them depends on a path of its own, so they run in a plain loop here;
 * errors go to the app's error handler exactly as the Router would send them.
 */
export function inOrder(stages: readonly RequestHandler[]): RequestHandler {
  return function runStages(req: Request, res: Response, done: NextFunction): void {
    let index = 0;
    const next = (error?: unknown): void => {
      if (error !== undefined && error !== null) return done(error);
      const stage = stages[index++];
      if (stage === undefined) return done();
      try {
        const result: unknown = stage(req, res, next);
        if (result instanceof Promise) result.catch(done);
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
