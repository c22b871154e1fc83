// Whether an answer is its request's, by X-Request-Id, under each `upstream.requestIdEcho` mode.
import { describe, expect, it } from 'vitest';
import { boundToRequest, createAnswerBinding } from '../../../src/proxy/answer-binding.ts';

describe('answer binding', () => {
  it('off: nothing to look at', () => {
    expect(createAnswerBinding('off')).toBeUndefined();
  });

  it('auto: another id refused at once; no id let through until the backend has echoed one, refused after', () => {
    const binding = createAnswerBinding('auto')!;
    expect(boundToRequest(binding, 'req-0001', 'req-0002')).toBe(false);
    expect(boundToRequest(binding, 'req-0001', undefined)).toBe(true);
    expect(boundToRequest(binding, 'req-0003', 'req-0003')).toBe(true);
    expect(boundToRequest(binding, 'req-0004', undefined)).toBe(false);
  });

  it('required: no id refused from the first answer', () => {
    const binding = createAnswerBinding('required')!;
    expect(boundToRequest(binding, 'req-0001', undefined)).toBe(false);
    expect(boundToRequest(binding, 'req-0001', 'req-0001')).toBe(true);
  });

  it('the field twice is refused, even when one of its values is the id sent', () => {
    expect(boundToRequest(createAnswerBinding('auto')!, 'req-0001', ['req-0001', 'req-0001'])).toBe(false);
  });
});
