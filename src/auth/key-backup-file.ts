// Reads a key export file a batch at a time, checking every line, the count and duplicates (src/auth/key-backup-format.ts).
import { createReadStream } from 'node:fs';
import { ExportLineError, parseHeader, parseKeyLine, type ExportedKey, type ExportHeader } from './key-backup-format.ts';
import { KeyAdminError } from './key-admin-error.ts';

/**
 * The longest line an import reads (docs/reference.md, "Key export format"): a key line is at most some 1.2 KB (a
 * 128-character consumer name of 4-byte characters, escaped, is the largest field). A longer line is refused as soon
 * as its first 16 KiB are read, never held whole.
 */
export const MAX_EXPORT_LINE_BYTES = 16_384;

/** Reads at most this much of the file at once. */
const CHUNK_BYTES = 65_536;

/**
 * The file's lines with their numbers, a line at a time (memory bounded by a chunk and the longest line allowed,
 * whatever the file holds; node:readline would buffer a line of any length). A trailing CR is dropped.
 */
async function* numberedLines(file: string, at: (number: number, error: unknown) => never): AsyncGenerator<[number, string]> {
  const stream = createReadStream(file, { highWaterMark: CHUNK_BYTES });
  let parts: Buffer[] = [];
  let held = 0;
  let number = 0;
  const line = (): string => {
    number += 1;
    const text = Buffer.concat(parts, held).toString('utf8');
    parts = [];
    held = 0;
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  const tooLong = (): never => {
    stream.destroy();
    return at(number, new ExportLineError(`longer than ${MAX_EXPORT_LINE_BYTES} bytes, the most a line of a key export can be`));
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (let end = chunk.indexOf(10, start); end !== -1; end = chunk.indexOf(10, start)) {
        if (held + end - start > MAX_EXPORT_LINE_BYTES) {
          number += 1;
          tooLong();
        }
        parts.push(chunk.subarray(start, end));
        held += end - start;
        const text = line();
        start = end + 1;
        if (number > 1 && text === '') continue;
        yield [number, text];
      }
      held += chunk.length - start;
      parts.push(chunk.subarray(start));
      if (held > MAX_EXPORT_LINE_BYTES) {
        number += 1;
        tooLong();
      }
    }
    if (held > 0) {
      const text = line();
      if (!(number > 1 && text === '')) yield [number, text];
    }
  } finally {
    stream.destroy();
  }
}

/**
 * The header, then the keys in batches; every line checked (its size first), the count too, duplicates refused.
 * `onHeader` may refuse the file (it throws) before any key line is read.
 */
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
  for await (const [number, text] of numberedLines(file, at)) {
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
