// A real headless Chromium (Debian's `chromium`), driven over the DevTools protocol with Node's own WebSocket: open a page, run its script.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scaled } from '../../support/time-scale.ts';

export interface Chromium {
  /** Opens `url` in a new tab, waits for its load event, and returns the value `expression` (awaited) gives in it. */
  evaluateIn(url: string, expression: string): Promise<unknown>;
  close(): Promise<void>;
}

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--remote-debugging-port=0',
];

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** Starts Chromium with a fresh profile; it says where its DevTools endpoint listens on stderr, within `timeoutMs`. */
export async function startChromium(timeoutMs = 20_000): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'gateway-chromium-'));
  const browser = spawn('chromium', [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => browser.once('exit', () => resolve()));
  /** A browser that could not be driven is not left running, nor its profile behind. */
  const abandon = async (error: unknown): Promise<never> => {
    browser.kill('SIGKILL');
    if (browser.exitCode === null && browser.signalCode === null) await exited;
    rmSync(profile, { recursive: true, force: true });
    throw error;
  };
  let stderr = '';
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chromium gave no DevTools endpoint within ${scaled(timeoutMs)} ms:\n${stderr}`)), scaled(timeoutMs));
    browser.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
    browser.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`chromium exited (${code}) before it listened:\n${stderr}`));
    });
  }).catch(abandon);

  const socket = new WebSocket(endpoint);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', () => reject(new Error(`could not connect to ${endpoint}`)), { once: true });
  }).catch(abandon);
  let nextId = 1;
  const pending = new Map<number, { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  const listeners = new Set<(message: Message) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as Message;
    if (message.id !== undefined) {
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) waiting?.reject(new Error(message.error.message));
      else waiting?.resolve(message.result ?? {});
    }
    for (const listener of listeners) listener(message);
  });

  function send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = nextId++;
    socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }

  /** The first message `matches` accepts, within `timeoutMs`. */
  function nextMessage(matches: (message: Message) => boolean): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`no matching DevTools event within ${scaled(timeoutMs)} ms`));
      }, scaled(timeoutMs));
      const listener = (message: Message) => {
        if (!matches(message)) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(message);
      };
      listeners.add(listener);
    });
  }

  return {
    async evaluateIn(url, expression) {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = (await send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
      await send('Page.enable', {}, sessionId);
      const loaded = nextMessage((message) => message.sessionId === sessionId && message.method === 'Page.loadEventFired');
      await send('Page.navigate', { url }, sessionId);
      await loaded;
      const evaluated = (await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }, sessionId)) as {
        result: { value?: unknown };
        exceptionDetails?: { text: string };
      };
      await send('Target.closeTarget', { targetId });
      if (evaluated.exceptionDetails) throw new Error(`the page's script threw: ${evaluated.exceptionDetails.text}`);
      return evaluated.result.value;
    },
    async close() {
      // Chromium may exit before it answers: its exit is what is waited for.
      send('Browser.close').catch(() => undefined);
      socket.close();
      const killer = setTimeout(() => browser.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
