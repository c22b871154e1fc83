// Which consumer names a key may carry: the rule the admin API's document, KeyAdmin and the CLI share.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONSUMER_NAME_PATTERN, consumerNameProblem } from '../../../src/auth/consumer-name.ts';

const CHARACTERS =
  'a consumer name holds letters, marks, numbers, punctuation, symbols and inner spaces only: no control or format characters, other separators, or leading or trailing space';

describe('consumerNameProblem', () => {
  it.each([
    ['ASCII', 'acme'],
    ['inner spaces, punctuation and symbols', 'Acme Corp. (EU) #2 + €'],
    ['letters with marks, composed or not', 'Café Cafe\u0301'],
    ['other scripts', '北京 Москва'],
    ['one character', 'x'],
    ['128 characters beyond the BMP (256 UTF-16 units)', '𝔸'.repeat(128)],
  ])('accepts %s', (_, name) => {
    expect(consumerNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['ESC', 'a\u001b[31m'],
    ['a newline', 'a\nb'],
    ['a tab', 'a\tb'],
    ['NUL', 'a\u0000'],
    ['DEL', 'a\u007f'],
    ['a C1 control', 'a\u009b'],
    ['a bidi override', 'a\u202eb'],
    ['a zero-width joiner', 'a\u200db'],
    ['a no-break space', 'a\u00a0b'],
    ['a line separator', 'a\u2028b'],
    ['a leading space', ' a'],
    ['a trailing space', 'a '],
    ['only a space', ' '],
    ['a lone surrogate', 'a\ud800'],
    ['a private-use character', 'a\ue000'],
  ])('refuses %s', (_, name) => {
    expect(consumerNameProblem(name)).toBe(CHARACTERS);
  });

  it('refuses an empty name', () => {
    expect(consumerNameProblem('')).toBe('a key needs a consumer name');
  });

  it('refuses 129 characters', () => {
    expect(consumerNameProblem('x'.repeat(129))).toBe('a consumer name is at most 128 characters (this one has 129)');
  });

  it('is the pattern the admin document declares', () => {
    const document = parse(readFileSync(new URL('../../../config/admin.openapi.yaml', import.meta.url), 'utf8')) as {
      components: { schemas: { ConsumerName: { pattern: string; maxLength: number } } };
    };
    expect(document.components.schemas.ConsumerName).toMatchObject({ pattern: CONSUMER_NAME_PATTERN, maxLength: 128 });
  });
});
