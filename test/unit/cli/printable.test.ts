// What the CLIs print of values read from Redis: every character a terminal acts on, escaped, in text and in JSON.
import { describe, expect, it } from 'vitest';
import { printable, printableJson } from '../../../src/cli/printable.ts';

describe('printable', () => {
  it.each([
    ['ESC, which starts terminal sequences', 'a\u001b[2Jb', 'a\\x1b[2Jb'],
    ['a newline, which would start a forged line', 'a\nrevoked: true', 'a\\x0arevoked: true'],
    ['NUL and DEL', '\u0000\u007f', '\\x00\\x7f'],
    ['C1 CSI', '\u009b31m', '\\x9b31m'],
    ['a right-to-left override', 'a\u202eb', 'a\\u202eb'],
    ['a line separator', 'a\u2028b', 'a\\u2028b'],
    ['a lone surrogate', 'a\ud800b', 'a\\ud800b'],
    ['a backslash, so an escape shown is never a name typed', 'a\\x1b', 'a\\\\x1b'],
  ])('escapes %s', (_, text, shown) => {
    expect(printable(text)).toBe(shown);
  });

  it('leaves printable text of any script as it is', () => {
    expect(printable('Café Müller (北京) 𝔸 €')).toBe('Café Müller (北京) 𝔸 €');
  });
});

describe('printableJson', () => {
  it('escapes what JSON.stringify leaves raw, and reads back the same', () => {
    const value = { consumer: 'a\u009b\u202e\u2028\u007fb\u001b' };
    const text = printableJson(value);
    expect(text).toBe('{"consumer":"a\\u009b\\u202e\\u2028\\u007fb\\u001b"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});
