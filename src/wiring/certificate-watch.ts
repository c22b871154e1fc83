// Re-reads the certificate and key files in use and runs a reload when their bytes change: renewals taken up without a signal.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

export interface CertificateWatchOptions {
  /** The files in use now (a reload may change the upstream's). */
  files: () => readonly string[];
  intervalMs: number;
  /** Runs the reload; resolves whether it was taken up. */
  reload: () => Promise<boolean>;
  /** The files' bytes when they were read for serving (certificateDigests, taken before): the bytes in force. */
  baseline: CertificateDigests;
}

export interface CertificateWatch {
  stop(): void;
}

/** A file's bytes as a digest; `missing` while it cannot be read (a Secret being rewritten). */
type Digests = Map<string, string>;
export type CertificateDigests = ReadonlyMap<string, string>;

/**
 * The files' digests now, read synchronously: taken before the files are read for serving, so a renewal written
 * between the two is seen as a change by the first check (a reload too many at worst), never taken as the baseline.
 */
export function certificateDigests(files: readonly string[]): CertificateDigests {
  return new Map(
    files.map((file) => {
      try {
        return [file, digestOf(readFileSync(file))];
      } catch {
        return [file, 'missing'];
      }
    }),
  );
}

const digestOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function readDigests(files: readonly string[]): Promise<Digests> {
  const read = await Promise.all(files.map(async (file) => [file, await readFile(file).then(digestOf, () => 'missing')] as const));
  return new Map(read);
}

const same = (a: Digests, b: Digests) => a.size === b.size && [...a].every(([file, digest]) => b.get(file) === digest);

/**
 * A polling read, not fs.watch: a Kubernetes Secret volume is updated by swapping a symlink to a new directory,
 * which inotify reports on the directory, not on the file a path names, and not at all through some volume types.
 * Reading follows the links, so the bytes are what the next handshake would get.
 *
 * The bytes are compared with the files last tried (the pair in force at start): a change is reloaded once; a
 * refused reload (say a certificate written before its key: they no longer match) is tried again only when the
 * bytes change again, so a bad file is refused once, not every interval. Putting the pair in force back after a
 * refusal is such a change: its reload succeeds and clears the refused state (config_last_reload_successful).
 */
export function watchCertificates(options: CertificateWatchOptions): CertificateWatch {
  let tried: Digests = new Map(options.baseline);
  let checking = false;
  async function check(): Promise<void> {
    const files = options.files();
    const now = await readDigests(files);
    // A file new to the list (a reload named it) was read by that reload: its bytes now are the ones tried.
    const known = new Map(files.map((file) => [file, tried.get(file) ?? now.get(file)!]));
    if (same(now, known)) {
      tried = known;
      return;
    }
    tried = now;
    await options.reload().catch(() => false);
  }
  const timer = setInterval(() => {
    // A reload slower than the interval is not overtaken by the next check.
    if (checking) return;
    checking = true;
    void check().finally(() => (checking = false));
  }, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
