// inOrder: a version's stages run as one middleware, keeping each stage's Express contract.
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { createErrorHandler } from '../../../src/errors/error-handler.ts';
import { inOrder, NEXT_CALLED_TWICE } from '../../../src/pipeline/in-order.ts';
import { createRecord } from '../../../src/pipeline/request-record.ts';
import { propagationOnly } from '../../../src/tracing/tracer.ts';

const req = {} as Request;
const res = {} as Response;

/** Runs the stages and resolves with what reached the app's `next`: undefined (went on) or the error. */
function run(stages: RequestHandler[]): Promise<unknown> {
  return new Promise((resolve) => inOrder(stages)(req, res, ((error?: unknown) => resolve(error)) as NextFunction));
}

const record =
  (ran: string[], name: string): RequestHandler =>
  (_req, _res, next) => {
    ran.push(name);
    next();
  };

/** Runs synchronous stages and returns every call of the app's `next`, in order. */
function reachedApp(stages: RequestHandler[]): unknown[] {
  const calls: unknown[] = [];
  inOrder(stages)(req, res, ((error?: unknown) => calls.push(error)) as NextFunction);
  return calls;
}

/** A stage that has taken the request over (the proxy waiting for the upstream): it answers later, and never calls next. */
const answersLater: RequestHandler = () => undefined;

const calledTwice = expect.objectContaining({ message: NEXT_CALLED_TWICE });

describe('inOrder', () => {
  it('runs every stage in order, then goes on', async () => {
    const ran: string[] = [];
    expect(await run([record(ran, 'a'), record(ran, 'b'), record(ran, 'c')])).toBeUndefined();
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('runs an async stage to completion before the next one', async () => {
    const ran: string[] = [];
    const slow: RequestHandler = async (_req, _res, next) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      ran.push('slow');
      next();
    };
    expect(await run([slow, record(ran, 'after')])).toBeUndefined();
    expect(ran).toEqual(['slow', 'after']);
  });

  it('passes a thrown refusal on and runs no later stage', async () => {
    const ran: string[] = [];
    const refusal = new Error('refused');
    const refuse: RequestHandler = () => {
      throw refusal;
    };
    expect(await run([refuse, record(ran, 'after')])).toBe(refusal);
    expect(ran).toEqual([]);
  });

  it('passes a rejected promise on', async () => {
    const refusal = new Error('rejected');
    const reject: RequestHandler = async () => {
      throw refusal;
    };
    expect(await run([reject])).toBe(refusal);
  });

  it('passes an error given to next on and runs no later stage', async () => {
    const ran: string[] = [];
    const refusal = new Error('next(error)');
    expect(await run([(_req, _res, next) => next(refusal), record(ran, 'after')])).toBe(refusal);
    expect(ran).toEqual([]);
  });

  it('stops at a stage that answers without calling next', async () => {
    const ran: string[] = [];
    let reached = false;
    inOrder([record(ran, 'a'), () => undefined, record(ran, 'never')])(req, res, (() => (reached = true)) as NextFunction);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(ran).toEqual(['a']);
    expect(reached).toBe(false);
  });

  describe('refuses a second next() from one stage', () => {
    it('throws to the stage that calls it again, and runs the later stages once', () => {
      const ran: string[] = [];
      let thrown: unknown;
      const twice: RequestHandler = (_req, _res, next) => {
        next();
        try {
          next();
        } catch (error) {
          thrown = error;
        }
      };
      expect(reachedApp([twice, record(ran, 'after')])).toEqual([undefined]);
      expect(ran).toEqual(['after']);
      expect(thrown).toEqual(calledTwice);
    });

    it('passes the error on when the stage lets it through', () => {
      const twice: RequestHandler = (_req, _res, next) => {
        next();
        next();
      };
      expect(reachedApp([twice, answersLater])).toEqual([calledTwice]);
    });

    it('refuses next(error) after next() too', () => {
      const refusal = new Error('too late');
      const twice: RequestHandler = (_req, _res, next) => {
        next();
        next(refusal);
      };
      expect(reachedApp([twice, answersLater])).toEqual([calledTwice]);
    });

    it('refuses a second call made after the later stages went on, from an async stage (its rejection)', async () => {
      let secondCall: () => void = () => undefined;
      const twice: RequestHandler = async (_req, _res, next) => {
        next();
        await new Promise<void>((resolve) => (secondCall = resolve));
        next();
      };
      const ran: string[] = [];
      const reached = new Promise<unknown>((resolve) => inOrder([twice, record(ran, 'after'), answersLater])(req, res, resolve as NextFunction));
      secondCall();
      expect(await reached).toEqual(calledTwice);
      expect(ran).toEqual(['after']);
    });

    it('reaches the error handler through Express: a 500 internal_error body, the error reported', async () => {
      const onUnexpected = vi.fn();
      const twice: RequestHandler = (_req, _res, next) => {
        next();
        next();
      };
      const app = express();
      app.use((incoming, response, next) => {
        response.locals.gateway = createRecord(incoming, propagationOnly().begin);
        next();
      });
      app.use(inOrder([twice, answersLater]));
      app.use(createErrorHandler(onUnexpected));
      const answer = await request(app).get('/pets');
      expect(answer.status).toBe(500);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.body).toEqual({ code: 'internal_error', message: 'The gateway failed to handle the request', status: 500 });
      expect(onUnexpected).toHaveBeenCalledWith(calledTwice);
    });
  });
});
