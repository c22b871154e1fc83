// One metrics exposition at a time: scrapes that arrive while one is being rendered share it, so a flood of pullers costs one render.
/**
 * Wraps `render` so that calls made while a render is under way get that render's text instead of starting another. Nothing is
 * kept once it settles: a scrape that arrives later renders afresh, so a count taken before a scrape is always in its answer.
 */
export function shareRender(render: () => Promise<string>): () => Promise<string> {
  let underWay: Promise<string> | undefined;
  return () => {
    if (underWay) return underWay;
    const started = render().finally(() => {
      underWay = undefined;
    });
    underWay = started;
    return started;
  };
}
