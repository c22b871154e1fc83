// The strict body parser: RFC 8259 JSON from UTF-8 bytes, unique names, integers with their spelling.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describePath, parseJsonBody } from '../../../src/contract/strict-json.ts';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('parseJsonBody accepts', () => {
  it.each([
    ['{"name":"Rex","categoryId":4}', { name: 'Rex', categoryId: 4 }],
    [' \t\r\n{ "a" : [ 1 , -2 , 0.5 , true , false , null ] } \n', { a: [1, -2, 0.5, true, false, null] }],
    ['"caf\\u00e9 \\"\\\\\\/\\b\\f\\n\\r\\t"', 'café "\\/\b\f\n\r\t'],
    ['"\\ud83d\\udc36 🐶"', '🐶 🐶'],
    ['{"a":{"a":{"a":1}}}', { a: { a: { a: 1 } } }],
    ['[{"a":1},{"a":1}]', [{ a: 1 }, { a: 1 }]],
    ['{"A":1,"a":2}', { A: 1, a: 2 }],
    ['{}', {}],
    ['[]', []],
    ['0', 0],
    ['1.5e3', 1500],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('%s', (text, value) => {
    expect(parseJsonBody(utf8(text))).toEqual({ ok: true, value, nonCanonicalIntegers: expect.any(Array) });
  });

  it('makes "__proto__" an own member, as JSON.parse does, without touching the prototype', () => {
    const parsed = parseJsonBody(utf8('{"__proto__":{"categoryId":1}}'));
    expect(parsed.ok).toBe(true);
    const value = (parsed as { value: Record<string, unknown> }).value;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect((value as { categoryId?: unknown }).categoryId).toBeUndefined();
  });
});

describe('parseJsonBody refuses', () => {
  it.each([
    ['a duplicate name', '{"name":5,"categoryId":1,"name":"a"}', "field 'name' must be given once"],
    ['a duplicate with the same value', '{"a":1,"a":1}', "field 'a' must be given once"],
    ['a duplicate spelled with an escape', '{"a":1,"\\u0061":2}', "field 'a' must be given once"],
    ['a duplicate in a nested object', '{"owner":{"tags":[{"k":1,"k":2}]}}', "field 'owner.tags.0.k' must be given once"],
    ['a duplicate "__proto__"', '{"__proto__":1,"__proto__":2}', "field '__proto__' must be given once"],
    ['an unpaired high surrogate escape', '"\\ud800"', 'contains an unpaired surrogate escape'],
    ['an unpaired low surrogate escape', '"\\udc00x"', 'contains an unpaired surrogate escape'],
    ['a high surrogate escape followed by a non-surrogate', '"\\ud800\\u0041"', 'contains an unpaired surrogate escape'],
    ['nothing', '', 'is not valid JSON'],
    ['a truncated object', '{"name":', 'is not valid JSON'],
    ['a trailing comma', '{"a":1,}', 'is not valid JSON'],
    ['a trailing comma in an array', '[1,]', 'is not valid JSON'],
    ['single quotes', "{'a':1}", 'is not valid JSON'],
    ['an unquoted name', '{a:1}', 'is not valid JSON'],
    ['a comment', '{"a":1/* c */}', 'is not valid JSON'],
    ['two values', '{} {}', 'is not valid JSON'],
    ['a leading zero', '01', 'is not valid JSON'],
    ['a plus sign', '+1', 'is not valid JSON'],
    ['a bare fraction', '.5', 'is not valid JSON'],
    ['a fraction without digits', '1.', 'is not valid JSON'],
    ['an exponent without digits', '1e', 'is not valid JSON'],
    ['a minus alone', '-', 'is not valid JSON'],
    ['NaN', 'NaN', 'is not valid JSON'],
    ['Infinity', '-Infinity', 'is not valid JSON'],
    ['hexadecimal', '0x10', 'is not valid JSON'],
    ['a raw control character in a string', '"a\u0001b"', 'is not valid JSON'],
    ['a raw newline in a string', '"a\nb"', 'is not valid JSON'],
    ['an unknown escape', '"\\x41"', 'is not valid JSON'],
    ['a short unicode escape', '"\\u12"', 'is not valid JSON'],
    ['an unterminated string', '"abc', 'is not valid JSON'],
    ['an unterminated escape', '"\\', 'is not valid JSON'],
    ['a capitalised literal', 'True', 'is not valid JSON'],
    ['a truncated literal', 'nul', 'is not valid JSON'],
    ['a non-JSON space', '\u00a0{}', 'is not valid JSON'],
  ])('%s', (_case, text, reason) => {
    expect(parseJsonBody(utf8(text))).toEqual({ ok: false, reason });
  });

  it.each([
    ['a UTF-8 byte order mark', [0xef, 0xbb, 0xbf, 0x7b, 0x7d], 'must not start with a byte order mark'],
    ['a byte that never occurs in UTF-8', [0x22, 0xff, 0x22], 'is not valid UTF-8'],
    ['a cut multi-byte sequence', [0x22, 0xc3, 0x22], 'is not valid UTF-8'],
    ['an overlong encoding of "/"', [0x22, 0xc0, 0xaf, 0x22], 'is not valid UTF-8'],
    ['an encoded surrogate', [0x22, 0xed, 0xa0, 0x80, 0x22], 'is not valid UTF-8'],
    ['a code point above U+10FFFF', [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], 'is not valid UTF-8'],
    ['Latin-1 text', [...Buffer.from('{"name":"Caf\xe9"}', 'latin1')], 'is not valid UTF-8'],
    ['UTF-16', [...Buffer.from('{}', 'utf16le')], 'is not valid JSON'],
  ])('%s', (_case, bytes, reason) => {
    expect(parseJsonBody(Buffer.from(bytes))).toEqual({ ok: false, reason });
  });

  it('nesting deeper than the limit, without exhausting the stack', () => {
    expect(parseJsonBody(utf8(`${'['.repeat(64)}${']'.repeat(64)}`)).ok).toBe(true);
    const tooDeep = (levels: number) => ({ ok: false, reason: `is nested more than ${levels} levels deep`, bound: 'depth' });
    expect(parseJsonBody(utf8(`${'['.repeat(65)}${']'.repeat(65)}`))).toEqual(tooDeep(64));
    expect(parseJsonBody(utf8('{"a":'.repeat(30_000)))).toEqual(tooDeep(64));
    expect(parseJsonBody(utf8('[[[1]]]'), { maxDepth: 2 })).toEqual(tooDeep(2));
    expect(parseJsonBody(utf8('[[[1]],[[2]],{"a":[1]}]'), { maxDepth: 3 }).ok).toBe(true);
  });

  it('more values and member names than the bound: refused at the first one past it', () => {
    const tooMany = (values: number) => ({ ok: false, reason: `has more than ${values} values and member names`, bound: 'values' });
    // [1,"a",{"b":null},[true]]: the array, 1, "a", the object, the name b, null, the inner array, true: 8.
    const eight = utf8('[1,"a",{"b":null},[true]]');
    expect(parseJsonBody(eight, { maxValues: 8 }).ok).toBe(true);
    expect(parseJsonBody(eight, { maxValues: 7 })).toEqual(tooMany(7));
    expect(parseJsonBody(utf8(`[${Array(65_504).fill('0.0').join(',')}]`), { maxValues: 16_384, spellings: false })).toEqual(tooMany(16_384));
  });

  describe('a bounded body over 16 KiB, parsed from a prefix while the prefix settles it, refuses as the whole one does', () => {
    const tooMany = (values: number) => ({ ok: false, reason: `has more than ${values} values and member names`, bound: 'values' });

    it('invalid UTF-8 or a byte order mark past the prefix is still refused as such, not as past the bound', () => {
      const flat = `[${Array(65_504).fill('0.0').join(',')}]`;
      expect(parseJsonBody(Buffer.concat([utf8(flat.slice(0, -1)), Buffer.from([0xff]), utf8(']')]), { maxValues: 4_096 })).toEqual({
        ok: false,
        reason: 'is not valid UTF-8',
      });
      expect(parseJsonBody(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8(flat)]), { maxValues: 4_096 })).toEqual({
        ok: false,
        reason: 'must not start with a byte order mark',
      });
      expect(parseJsonBody(utf8(flat), { maxValues: 4_096 })).toEqual(tooMany(4_096));
    });

    it('a bound first reached past the first prefix, or a prefix cut inside a character, reads on', () => {
      // 4,097 strings of 9 bytes: the bound is reached past 32 KiB.
      expect(parseJsonBody(utf8(`[${Array(4_097).fill('"aaaaaaa"').join(',')}]`), { maxValues: 4_096 })).toEqual(tooMany(4_096));
      // Two-byte characters across the first prefix's end: the value at the bound is the same.
      const wide = `[${Array(4_000).fill('"éé"').join(',')}]`;
      expect(parseJsonBody(utf8(wide), { maxValues: 4_000 })).toEqual(tooMany(4_000));
      expect(parseJsonBody(utf8(wide), { maxValues: 4_001 })).toEqual({ ok: true, value: Array(4_000).fill('éé'), nonCanonicalIntegers: [] });
    });

    it('given as the parts it arrived in, wherever they are cut, parses as the parts joined', () => {
      const bodies = [`[${Array(65_504).fill('0.0').join(',')}]`, `[${Array(4_000).fill('"éé€😀"').join(',')}]`, `${'['.repeat(40)}${' '.repeat(20_000)}`];
      fc.assert(
        fc.property(
          fc.constantFrom(...bodies.map(utf8)),
          fc.array(fc.nat(), { maxLength: 8 }),
          fc.constantFrom(4_000, 4_001, 4_096, 100_000),
          (body, cuts, maxValues) => {
            const at = [0, ...cuts.map((cut) => cut % (body.length + 1)).sort((a, b) => a - b), body.length];
            const parts = at.slice(1).map((end, index) => body.subarray(at[index], end));
            expect(parseJsonBody(parts, { maxValues, spellings: false })).toEqual(parseJsonBody(body, { maxValues, spellings: false }));
          },
        ),
        { numRuns: 60 },
      );
    });

    it('a prefix ending where the next character would close an array does not count a value that is not there', () => {
      // The inner `[` is the first prefix's last character and its `]` the next: 8,193 values, within a bound of 8,193.
      const body = `[${'0,'.repeat(8_191)}[]]`;
      expect(body.indexOf('[]')).toBe(16_383);
      expect(parseJsonBody(utf8(body), { maxValues: 8_193 }).ok).toBe(true);
      expect(parseJsonBody(utf8(body), { maxValues: 8_192 })).toEqual(tooMany(8_192));
    });
  });

  it('records no spellings when told not to, and still refuses a member named twice', () => {
    expect(parseJsonBody(utf8('{"a":[1.0,2e0]}'), { spellings: false })).toEqual({ ok: true, value: { a: [1, 2] }, nonCanonicalIntegers: [] });
    expect(parseJsonBody(utf8('{"a":{"b":1,"b":2}}'), { spellings: false }).ok).toBe(false);
  });

  it('cuts a long member name short in the reason', () => {
    const name = 'n'.repeat(500);
    expect(parseJsonBody(utf8(`{"${name}":1,"${name}":2}`))).toEqual({ ok: false, reason: `field '${'n'.repeat(79)}…' must be given once` });
  });
});

describe('parseJsonBody and integer spellings', () => {
  it.each([
    ['1.0', 1],
    ['1e2', 100],
    ['1E+2', 100],
    ['100e-2', 1],
    ['-0', -0],
    ['-0.0', -0],
    ['0e0', 0],
    ['0.0', 0],
    ['1e-400', 0],
    ['1.5e1', 15],
    // biome-ignore lint/correctness/noPrecisionLoss: the literal's nearest double is the point of the case.
    ['9.223372036854775807e18', 9223372036854775807],
  ])('reports %s, whose value is an integer, with its spelling and place', (literal, value) => {
    expect(parseJsonBody(utf8(`{"a":[{"b":${literal}}]}`))).toEqual({
      ok: true,
      value: { a: [{ b: value }] },
      nonCanonicalIntegers: [{ path: ['a', 0, 'b'], text: literal }],
    });
  });

  it.each(['0', '7', '-12', '1.5', '1e-1', '2.5e0', '1e400'])('does not report %s', (literal) => {
    const parsed = parseJsonBody(utf8(`[${literal}]`));
    expect(parsed).toEqual({ ok: true, value: [Number(literal)], nonCanonicalIntegers: [] });
  });

  it('reports a whole body that is one such number at the empty path', () => {
    expect(parseJsonBody(utf8('1.0'))).toEqual({ ok: true, value: 1, nonCanonicalIntegers: [{ path: [], text: '1.0' }] });
  });

  it.each([
    ['9223372036854775807', Number.MAX_SAFE_INTEGER],
    ['-9223372036854775808', Number.MIN_SAFE_INTEGER],
    ['9223372036854775808', 2 ** 64],
    ['-9223372036854775809', -(2 ** 64)],
    ['123456789012345678901234567890', 2 ** 64],
  ])('decides the int64 range of %s on its digits', (literal, value) => {
    expect(parseJsonBody(utf8(`{"id":${literal}}`))).toEqual({ ok: true, value: { id: value }, nonCanonicalIntegers: [] });
  });
});

describe('parseJsonBody properties', () => {
  // Numbers JSON.parse reads exactly; integers beyond double precision follow the int64 rule instead.
  const number = fc.oneof(
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n) || Number.isSafeInteger(n)),
  );
  const string = fc.string({ unit: 'binary' });
  const { json } = fc.letrec((tie) => ({
    json: fc.oneof({ depthSize: 'small', maxDepth: 6 }, string, number, fc.boolean(), fc.constant(null), tie('array'), tie('object')),
    array: fc.array(tie('json')),
    object: fc.dictionary(string, tie('json')),
  }));

  it('agrees with JSON.parse on JSON.stringify output', () => {
    fc.assert(
      fc.property(json, fc.boolean(), (value, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const parsed = parseJsonBody(utf8(text));
        expect(parsed).toEqual({ ok: true, value: JSON.parse(text), nonCanonicalIntegers: expect.any(Array) });
      }),
    );
  });

  it('never throws on arbitrary bytes, and agrees with JSON.parse on what is JSON', () => {
    const jsonish = fc.string({ unit: fc.constantFrom(...'{}[]",:0123456789.eE+- \\u"aenrstl'), maxLength: 40 }).map(utf8);
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), jsonish), (input) => {
        const parsed = parseJsonBody(input);
        const text = Buffer.from(input).toString('utf8');
        // Integers beyond double precision follow the int64 rule, not JSON.parse.
        if (/\d{16}/.test(text)) return;
        if (parsed.ok) expect(parsed.value).toEqual(JSON.parse(text));
        else if (parsed.reason === 'is not valid JSON') expect(() => JSON.parse(text)).toThrow(SyntaxError);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('describePath', () => {
  it.each([
    [[], ''],
    [['name'], 'name'],
    [['owner', 'tags', 0], 'owner.tags.0'],
    [['x'.repeat(80)], 'x'.repeat(80)],
    [['x'.repeat(81)], `${'x'.repeat(79)}…`],
    [['a'.repeat(50), 'b'.repeat(50)], `${'a'.repeat(50)}.${'b'.repeat(28)}…`],
  ])('%j reads %s', (path, described) => {
    expect(describePath(path)).toBe(described);
  });
});
