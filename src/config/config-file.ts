// Reads the configuration file as YAML; a syntax error is told by file, line, column and the key nearest it, never by an excerpt of the file.
import { readFileSync } from 'node:fs';
import { isPair, isScalar, isSeq, parseDocument, visit, type ErrorCode, type YAMLError } from 'yaml';

/** Thrown for a file that cannot be read or parsed: load-config.ts words it for the setting that named the file. */
export class ConfigFileError extends Error {
  override name = 'ConfigFileError';
}

/** Each syntax error in our words: the parser's messages quote the file (a password near the error was logged twice). */
const SYNTAX_ERRORS: Partial<Record<ErrorCode, string>> = {
  BAD_DQ_ESCAPE: 'an invalid escape in a double-quoted value',
  BAD_INDENT: 'bad indentation, or a [ or { not closed',
  BAD_SCALAR_START: 'a plain value cannot start with this character (quote the value)',
  BLOCK_AS_IMPLICIT_KEY: 'a second ": " on one line (quote a value that holds ": ")',
  BLOCK_IN_FLOW: 'a block value inside [ ] or { }',
  DUPLICATE_KEY: 'a key written twice in one mapping',
  MISSING_CHAR: 'a quote, bracket or brace not closed, or a missing ":"',
  MULTILINE_IMPLICIT_KEY: 'a key that spans lines (a missing ":" or quote above?)',
  TAB_AS_INDENT: 'a tab used for indentation (use spaces)',
  UNEXPECTED_TOKEN: 'an unexpected character',
};

/** The file's contents as plain data (an empty file is `{}`). */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    // The code, not the message: Node's message repeats the path.
    throw new ConfigFileError(`${file} could not be read (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message})`, { cause });
  }
  // Warnings are not printed: they would quote the file too.
  const document = parseDocument(text, { prettyErrors: false, logLevel: 'silent' });
  const [error] = document.errors;
  if (error) throw new ConfigFileError(describeSyntaxError(file, text, document, error));
  return document.toJS() ?? {};
}

function describeSyntaxError(file: string, text: string, document: ReturnType<typeof parseDocument>, error: YAMLError): string {
  const where = error.linePos?.[0] ?? lineAndColumn(text, error.pos[0]);
  const key = keyNear(text, document, error.pos[0]);
  const what = SYNTAX_ERRORS[error.code] ?? `YAML error ${error.code}`;
  return `${file} is not valid YAML: line ${where.line}, column ${where.col}${key ? `, at key ${key}` : ''}: ${what}`;
}

function lineAndColumn(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, col: before.at(-1)!.length + 1 };
}

/**
 * The dotted path of the last key before the error that begins its line (or a `- ` item): one found mid-line is more
 * likely part of a broken value (a password holding ": "), which must not be printed.
 */
function keyNear(text: string, document: ReturnType<typeof parseDocument>, offset: number): string | undefined {
  let nearest: string | undefined;
  visit(document, {
    Pair(_, pair, path) {
      if (!isScalar(pair.key) || !pair.key.range || pair.key.range[0] > offset || !beginsLine(text, pair.key.range[0])) return;
      const keys: string[] = [];
      for (const [i, node] of path.entries()) {
        if (isPair(node)) {
          if (!isScalar(node.key) || !node.key.range || !beginsLine(text, node.key.range[0])) return;
          keys.push(String(node.key.value));
        } else if (isSeq(node)) {
          const item = path[i + 1] ?? pair;
          keys.push(String(node.items.indexOf(item as never)));
        }
      }
      nearest = [...keys, String(pair.key.value)].join('.');
    },
  });
  return nearest;
}

/** Whether only spaces and `- ` stand between the line's start and `offset`. */
function beginsLine(text: string, offset: number): boolean {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ ]*(- +)*$/.test(text.slice(lineStart, offset));
}
