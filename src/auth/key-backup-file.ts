// Reads a key export file a batch at a time, checking every line, the count and duplicates (src/auth/key-backup-format.ts).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { ExportLineError, parseHeader, parseKeyLine, type ExportedKey, type ExportHeader } from './key-backup-format.ts';
import { KeyAdminError } from './key-admin-error.ts';

/** Reads the file's lines with their numbers, a line at a time (bounded memory whatever the file's size). */
async function* numberedLines(file: string): AsyncGenerator<[number, string]> {
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (number > 1 && line === '') continue;
    yield [number, line];
  }
}

/** The header, then the keys in batches; every line checked, the count too, duplicates refused. */
export async function* readExport(file: string, batchSize: number, onHeader: (header: ExportHeader) => void): AsyncGenerator<Array<[number, ExportedKey]>> {
  const at = (number: number, error: unknown): never => {
    if (error instanceof ExportLineError) throw new KeyAdminError('invalid', `${file}, line ${number}: ${error.message}; nothing was written`);
    throw error;
  };
  let header: ExportHeader | undefined;
  let batch: Array<[number, ExportedKey]> = [];
  const ids = new Set<string>();
  const hashes = new Set<string>();
  let last = 0;
  for await (const [number, text] of numberedLines(file)) {
    last = number;
    if (header === undefined) {
      try {
        header = parseHeader(text);
      } catch (error) {
        at(number, error);
      }
      onHeader(header!);
      continue;
    }
    let key: ExportedKey;
    try {
      key = parseKeyLine(text);
      if (ids.has(key.id)) throw new ExportLineError(`key ${key.id} appears twice`);
      if (hashes.has(key.keyHash)) throw new ExportLineError('this keyHash appears twice');
    } catch (error) {
      return at(number, error);
    }
    ids.add(key.id);
    hashes.add(key.keyHash);
    batch.push([number, key]);
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (header === undefined) throw new KeyAdminError('invalid', `${file} is empty; nothing was written`);
  if (batch.length > 0) yield batch;
  if (ids.size !== header.keys) at(last, new ExportLineError(`the header announces ${header.keys} keys but the file holds ${ids.size} (cut short?)`));
}
