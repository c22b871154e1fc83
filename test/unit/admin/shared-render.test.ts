// shareRender: scrapes arriving during a render share it; one arriving after renders afresh.
import { describe, expect, it } from 'vitest';
import { shareRender } from '../../../src/admin/shared-render.ts';

describe('shareRender', () => {
  it('gives calls made while a render is under way that render, and starts a new one for a call after it settled', async () => {
    let renders = 0;
    const render = shareRender(async () => {
      renders++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return `render ${renders}`;
    });
    const together = await Promise.all([render(), render(), render()]);
    expect(together).toEqual(['render 1', 'render 1', 'render 1']);
    expect(await render()).toBe('render 2');
    expect(renders).toBe(2);
  });

  it('lets a failed render fail its callers, and renders afresh after it', async () => {
    let calls = 0;
    const render = shareRender(async () => {
      calls++;
      if (calls === 1) throw new Error('collect failed');
      return 'ok';
    });
    await expect(Promise.all([render(), render()])).rejects.toThrow('collect failed');
    expect(await render()).toBe('ok');
    expect(calls).toBe(2);
  });
});
