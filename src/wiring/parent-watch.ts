// Under `npm start`: npm dies of SIGHUP (and SIGKILL) without passing it on, so the gateway notices and stops instead of running on orphaned, holding its ports.
export interface ParentWatchOptions {
  /** The process that started the gateway (npm), read at start. */
  parentPid: number;
  /** The parent now (`process.ppid`): another once the first has exited. */
  currentParent: () => number;
  /** How often the parent is looked at; the longest an orphan keeps its ports. */
  everyMs: number;
  /** Called once, when the parent is gone. */
  onGone: () => void;
}

/** Looks at the parent every `everyMs` without keeping the process alive; returns what stops looking. */
export function watchParent(options: ParentWatchOptions): () => void {
  const timer = setInterval(function lookAtParent() {
    if (options.currentParent() === options.parentPid) return;
    clearInterval(timer);
    options.onGone();
  }, options.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Whether npm runs this process as its start script (npm_lifecycle_event; another script's child inherits it, but not npm as parent). */
export function startedByNpm(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.npm_lifecycle_event === 'start';
}
