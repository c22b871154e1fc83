// What each client has received so far, for the upstream to wait on: a slow body's rest is written once its first part arrived.
//
// Time is never measured: the upstream writes the rest when the client has the first part (or at a cap), and records which came
// first. A gateway that relays as it reads lets the client see the first part first; one that holds the answer makes the cap fire.

/** Which came first for a slow body's rest: the client having its first part, or the cap. */
export type RestWritten = 'seen' | 'cap';

export interface Sightings {
  /** Told by client `client` after each read, with everything it received. */
  received(client: number, text: string): void;
  /** Resolves `seen` once the client that sent `tag` has received `text`, or `cap` after `capMs`. */
  until(tag: string, text: string, capMs: number): Promise<RestWritten>;
}

const CLIENT_OF_TAG = /^edge-c(\d+)-r\d+$/;

export function createSightings(): Sightings {
  const texts = new Map<number, string>();
  const waiters = new Set<{ client: number; text: string; done: (how: RestWritten) => void }>();
  return {
    received(client, text) {
      texts.set(client, text);
      for (const waiter of waiters) if (waiter.client === client && text.includes(waiter.text)) waiter.done('seen');
    },
    until(tag, text, capMs) {
      const client = Number(CLIENT_OF_TAG.exec(tag)?.[1] ?? -1);
      if (texts.get(client)?.includes(text)) return Promise.resolve('seen');
      return new Promise((resolve) => {
        const waiter = {
          client,
          text,
          done: (how: RestWritten) => {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(how);
          },
        };
        const timer = setTimeout(() => waiter.done('cap'), capMs);
        waiters.add(waiter);
      });
    },
  };
}
