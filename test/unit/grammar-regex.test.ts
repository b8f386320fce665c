// The regex subset (src/engine/grammar/regex.ts) on the byte-level matcher: accepted and rejected
// texts, unsupported constructs named in SchemaErrors, code points as UTF-8 sequences, JSON-string
// bodies spelled with JSON's escapes, and seeded random walks whose every output JavaScript's own
// RegExp (u flag) matches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { regexText, SchemaError } from '../../src/engine/grammar/index.js';
import { cfgNode, END, lit, seq } from '../../src/engine/grammar/nodes.js';
import { regexMachine } from '../../src/engine/grammar/regex.js';
import { encode, utf8Sequences } from '../../src/engine/grammar/utf8-ranges.js';
import { accepts, ended, randomWalk, Rng } from '../helpers/grammar-walk.js';

const whole = (p: string) => ended(regexText(p));

test('regex: literals, classes, escapes, groups, alternation and every quantifier', () => {
  const cases: [string, string[], string[]][] = [
    ['^[A-Z]{3}-\\d{4}$', ['ABC-1234'], ['AB-1234', 'ABC-12345', 'abc-1234', 'ABC_1234']],
    ['a|b+c?', ['a', 'b', 'bbbc'], ['', 'ac', 'c', 'bcc']],
    ['(?:foo|bar)*baz', ['baz', 'foobarfoobaz'], ['foo', 'fobaz']],
    ['(?<year>\\d{4})-(\\d\\d)', ['2024-05'], ['2024-5']],
    ['(?P<word>[a-z]+)!', ['hi!'], ['hi']],
    ['x{2,}y{0,2}z{3}', ['xxzzz', 'xxxxyyzzz'], ['xzzz', 'xxyyyzzz', 'xxzz']],
    ['a*?b+?c??', ['b', 'aabbc'], ['c', 'aa']],
    ['.', ['a', 'é', '😀', '\u2027'], ['\n', '\r', '\u2028', '', 'ab']],
    ['[^a-c]', ['d', '\n', '中'], ['a', 'b', 'c']],
    ['\\w\\W\\s\\S\\D', ['a. _x', 'Z\t\u3000.y'], ['aab_x', 'a. _1']],
    ['\\u0041\\x42\\u{1F600}\\/\\.', ['AB😀/.'], ['AB😀/x']],
    ['[\\d.-]+', ['1.-2'], ['1,2']],
    ['', [''], ['a']],
  ];
  for (const [p, good, bad] of cases) {
    const node = whole(p);
    for (const t of good) assert.ok(accepts(node, t), `${p} should match ${JSON.stringify(t)}`);
    for (const t of bad) assert.ok(!accepts(node, t), `${p} should not match ${JSON.stringify(t)}`);
  }
});

test('regex: unsupported constructs are SchemaErrors that name them', () => {
  const cases: [string, RegExp][] = [
    ['(?=a)b', /lookahead/],
    ['(?<!a)b', /lookbehind/],
    ['(a)\\1', /backreferences/],
    ['\\bword\\b', /word boundaries/],
    ['\\p{L}+', /Unicode property escapes/],
    ['a^b', /\^ anywhere but at the ends/],
    ['a$b', /\$ anywhere but at the ends/],
    ['a{20000}', /repetition count over 10000/],
    ['(?i:a)', /inline modifiers/],
    ['(unclosed', /invalid regex/],
    ['(a|b)*a(a|b){16}', /too complex/],
  ];
  for (const [p, message] of cases) {
    assert.throws(
      () => regexMachine(p, { mode: 'raw', anchored: true }),
      (e: Error) => e instanceof SchemaError && message.test(e.message),
      p,
    );
  }
});

test('UTF-8 ranges: every code point of a range is matched by exactly one sequence, and nothing else', () => {
  const rng = new Rng(7);
  const probes = [0, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xffff, 0x10000, 0x10ffff];
  for (let t = 0; t < 200; t++) {
    const a = Math.floor(rng.next() * 0x110000);
    const b = Math.min(0x10ffff, a + Math.floor(rng.next() * (t % 2 ? 0x100 : 0x20000)));
    const seqs = utf8Sequences(a, b);
    const matches = (c: number) => {
      const bytes = encode(c);
      return seqs.filter((s) => s.length === bytes.length && s.every(([lo, hi], i) => bytes[i] >= lo && bytes[i] <= hi)).length;
    };
    const samples = [a, b, a - 1, b + 1, ...probes, ...Array.from({ length: 20 }, () => a + Math.floor(rng.next() * (b - a + 1)))];
    for (const c of samples) {
      if (c < 0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) continue;
      assert.equal(matches(c), c >= a && c <= b ? 1 : 0, `U+${c.toString(16)} in [${a.toString(16)}, ${b.toString(16)}]`);
    }
  }
});

test('regex in a JSON string body: quotes, backslashes and controls only in their escaped spelling', () => {
  const body = (p: string) => seq([lit('"'), cfgNode(regexMachine(p, { mode: 'json', anchored: false })), lit('"'), END]);
  const node = body('^a"b\\\\c\\n\\u0001$');
  assert.ok(accepts(node, '"a\\"b\\\\c\\n\\u0001"'));
  assert.ok(!accepts(node, '"a"b\\\\c\\n\\u0001"'), 'a raw quote would end the string');
  assert.ok(!accepts(node, '"a\\u0022b\\\\c\\n\\u0001"'), 'one spelling per character');
  assert.ok(!accepts(node, '"a\\"b\\\\c\\u000a\\u0001"'));
  // Unanchored: the pattern anywhere in the string.
  const anywhere = body('ab+');
  for (const t of ['"ab"', '"xxabbby"', '"\\"ab\\n"']) assert.ok(accepts(anywhere, t), t);
  for (const t of ['"a"', '"ba"', '"a\\nb"']) assert.ok(!accepts(anywhere, t), t);
  const anchored = body('^ab|c$');
  for (const t of ['"abz"', '"zc"', '"ab"']) assert.ok(accepts(anchored, t), t);
  for (const t of ['"zab"', '"cz"']) assert.ok(!accepts(anchored, t), t);
});

// Patterns checked against JavaScript's RegExp on random walks through the matcher.
const PATTERNS = [
  '[A-Z]{3}-\\d{4}',
  '(?:\\+1[ -])?\\(?\\d{3}\\)?[ -]?\\d{3}-\\d{4}',
  '[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,6}',
  '(red|green|blue)(, (red|green|blue))*',
  '-?(0|[1-9]\\d*)(\\.\\d+)?',
  '[^,\\n]{1,8}(,[^,\\n]{1,8}){0,3}',
  '\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])',
  '(ab|a)(bc|c)?d',
  '[\\u00C0-\\u017F\\u4e00-\\u4e10]{2,5}',
  '.{0,12}!',
  '(?:[\\s\\S]){3}',
  '\\w+(?:\\s\\w+){0,4}\\.',
  '(a|b)*a(a|b){3}',
  '[😀-😂]+x?',
  '(?:0x)?[0-9a-fA-F]{1,8}',
  'v\\d+\\.\\d+\\.\\d+(-(alpha|beta|rc)\\.\\d+)?',
  '[^]{2}',
  '(?:"[^"]*"|\\d+)(?:;(?:"[^"]*"|\\d+))*',
];

test('regex: random walks through the matcher give only texts RegExp matches', () => {
  const rng = new Rng(42);
  for (const p of PATTERNS) {
    const node = whole(p);
    const re = new RegExp(`^(?:${p})$`, 'u');
    let done = 0;
    for (let w = 0; w < 60; w++) {
      const text = randomWalk(node, rng, { softLength: 40, stopChance: 0.2, asciiBias: 0.6 });
      if (text === null) continue;
      done++;
      assert.ok(re.test(text), `${p}: ${JSON.stringify(text)}`);
    }
    assert.ok(done >= 40, `${p}: only ${done} of 60 walks finished`);
  }
});
