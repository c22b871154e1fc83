// inOrder: a version's stages run as one middleware, keeping each stage's Express contract.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { inOrder } from '../../../src/pipeline/in-order.ts';

const req = {} as Request;
const res = {} as Response;

/** Runs the stages and resolves with what reached the app's `next`: undefined (went on) or the error. */
function run(stages: RequestHandler[]): Promise<unknown> {
  return new Promise((resolve) => inOrder(stages)(req, res, ((error?: unknown) => resolve(error)) as NextFunction));
}

const record = (ran: string[], name: string): RequestHandler => (_req, _res, next) => {
  ran.push(name);
  next();
};

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
});
