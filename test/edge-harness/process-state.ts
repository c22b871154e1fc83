// What Linux says of the gateway process from outside (/proc): whether a signal sent to it is still pending, and whether a port listens.
import { readFileSync } from 'node:fs';

/** The signals a schedule sends, by their number (the bit of a /proc pending mask is the number less one). */
const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;

/**
 * Whether SIGTERM or SIGINT is pending for process `pid` (sent, not yet taken by a thread of it), or `gone` once it has exited (a
 * zombie takes no signal). Standard signals are not queued: one sent while another of its kind is pending merges with it, so a
 * schedule sends each signal only once none is pending, and every signal it sends is then a delivery of its own.
 */
export function signalPending(pid: number): boolean | 'gone' {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 'gone';
  }
  if (/^State:\s+[ZX]/m.test(status)) return 'gone';
  // kill(2) puts the signal in the process's shared queue (ShdPnd), which a thread empties as it takes it.
  const shared = /^ShdPnd:\s+([0-9a-f]+)$/m.exec(status)?.[1];
  if (shared === undefined) throw new Error(`no ShdPnd in /proc/${pid}/status`);
  const mask = BigInt(`0x${shared}`);
  return Object.values(SIGNAL_NUMBERS).some((signal) => ((mask >> BigInt(signal - 1)) & 1n) === 1n);
}

/** Whether a TCP socket listens on 127.0.0.1:`port` (/proc/net/tcp: state 0A), without connecting to it, which it might accept. */
export function listensOn(port: number): boolean {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .some((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[1] === local && fields[3] === '0A';
    });
}
