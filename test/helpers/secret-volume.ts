// A directory laid out as the kubelet lays out a mounted Secret: each file a link through ..data, which is swapped in one rename.
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SecretVolume {
  /** The path a pod reads a key of the Secret at (`<dir>/tls.crt`). */
  path(name: string): string;
  /** Writes every file into a new directory, then points ..data at it: readers see the old set or the new one, never a mix. */
  update(files: Readonly<Record<string, string>>): void;
}

export function createSecretVolume(dir: string, files: Readonly<Record<string, string>>): SecretVolume {
  mkdirSync(dir, { recursive: true });
  let version = 0;
  const writeVersion = (contents: Readonly<Record<string, string>>) => {
    const name = `..version_${++version}`;
    mkdirSync(join(dir, name));
    for (const [file, text] of Object.entries(contents)) writeFileSync(join(dir, name, file), text);
    return name;
  };
  symlinkSync(writeVersion(files), join(dir, '..data'));
  for (const file of Object.keys(files)) symlinkSync(join('..data', file), join(dir, file));
  return {
    path: (name) => join(dir, name),
    update(contents) {
      symlinkSync(writeVersion(contents), join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    },
  };
}
