// GBNF (src/engine/grammar/gbnf.ts) on the byte-level matcher: llama.cpp's syntax, recursion,
// errors with their line and column, the bound on parser states, and random walks checked by an
// independent reader (RegExp for regular grammars, JSON.parse for llama.cpp's json.gbnf, a counter
// for balanced brackets).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gbnfText, GrammarError, SchemaError } from '../../src/engine/grammar/index.js';
import { feed } from '../../src/engine/grammar/matcher.js';
import { enter, type Frame } from '../../src/engine/grammar/nodes.js';
import { accepts, ended, randomWalk, Rng } from '../helpers/grammar-walk.js';

// llama.cpp's grammars/json.gbnf.
const JSON_GBNF = String.raw`
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
`;

const BALANCED = `
root ::= group+
group ::= "(" inner ")" | "[" inner "]"
inner ::= (group | [a-z])*
`;

test('GBNF: rules, literals, classes, groups, repetition, comments and multi-line alternatives', () => {
  const cases: [string, string[], string[]][] = [
    [
      JSON_GBNF,
      ['{}', '{"a": [1, -2.5e3, "x\\n", true, null, {"b": {}}]}', '{"k":"\\u00e9"}'],
      ['[]', '{"a"}', '{"a": 01}', '{"s": "\\x"}'],
    ],
    [BALANCED, ['()', '([ab](c))[]', '(((x)))'], ['(', '(]', ')(', '(A)', '']],
    ['root ::= "x"{2,4} "y"? # counts\n', ['xx', 'xxxxy'], ['x', 'xxxxx', 'xxyy']],
    [
      'root ::= "a" .  [^a-c\\n] "\\t\\x41\\u00e9\\U0001F600\\"\\\\\\[\\]"',
      ['a中d\tAé😀"\\[]', 'a\nz\tAé😀"\\[]'],
      ['a中b\tAé😀"\\[]', 'a中\n\tAé😀"\\[]'],
    ],
    ['root ::=\n  alpha\n  | digit+\nalpha ::= [a-zA-Z_-]\ndigit ::= [0-9]', ['a', '-', '123'], ['a1', '']],
    ['root ::= "" | "a" root', ['', 'aaa'], ['b']],
  ];
  for (const [g, good, bad] of cases) {
    const node = ended(gbnfText(g));
    for (const t of good) assert.ok(accepts(node, t), `${JSON.stringify(t)} should match ${g.slice(0, 40)}`);
    for (const t of bad) assert.ok(!accepts(node, t), `${JSON.stringify(t)} should not match ${g.slice(0, 40)}`);
  }
});

test('GBNF: mistakes are SchemaErrors with the line and column', () => {
  const cases: [string, RegExp][] = [
    ['root ::= foo', /line 1, column 10: rule 'foo' is not defined/],
    ['x ::= "a"', /there is no rule 'root'/],
    ['root ::= root "a" | "b"', /line 1, column 1: rule 'root' is left-recursive/],
    ['root ::= a\na ::= b "x"\nb ::= root? "y"', /line 2, column 1: rule 'a' is left-recursive/],
    ['root ::= "abc', /unterminated literal/],
    ['root ::= "a\\q"', /line 1, column 12: unknown escape \\q/],
    ['root ::= [z-a]', /column 13: a character range whose end is below its start/],
    ['root ::= "a"{3,2}', /the maximum is below the minimum/],
    ['root ::= x\nx ::= "a" x', /line 2, column 1: rule 'x' can never complete/],
    ['root ::= "a"\nroot ::= "b"', /line 2, column 1: rule 'root' is defined twice/],
    ['root = "a"', /line 1, column 6: expected '::=' after the rule name/],
    ['root ::= "a" )', /line 1, column 14: unexpected "\)"/],
    ['root ::= "\\u12"', /\\u needs 4 hex digits/],
    ['', /the grammar is empty/],
  ];
  for (const [g, message] of cases) {
    assert.throws(
      () => ended(gbnfText(g)),
      (e: Error) => e instanceof SchemaError && message.test(e.message),
      `${JSON.stringify(g)} → ${message}`,
    );
  }
});

test('GBNF: a grammar whose parser states multiply past the limit is a GrammarError, not unbounded memory', () => {
  const node = ended(gbnfText('root ::= "(" root ")" | ""'));
  let st: Frame | null = enter(node, null);
  assert.throws(
    () => {
      for (let i = 0; i < 70_000 && st !== null; i++) st = feed(st, 0x28);
    },
    (e: Error) => e instanceof GrammarError && !(e instanceof SchemaError) && /too complex/.test(e.message),
  );
});

test('GBNF: random walks give only texts an independent reader accepts', () => {
  const rng = new Rng(11);
  const balanced = (t: string) => {
    const stack: string[] = [];
    for (const c of t) {
      if (c === '(' || c === '[') stack.push(c);
      else if (c === ')' || c === ']') {
        if (stack.pop() !== (c === ')' ? '(' : '[')) return false;
      } else if (!/[a-z]/.test(c)) return false;
    }
    return stack.length === 0 && t.length > 0;
  };
  const checks: [string, (t: string) => boolean][] = [
    [JSON_GBNF, (t) => typeof JSON.parse(t) === 'object'],
    [BALANCED, balanced],
    ['root ::= [a-z]+ ("," [a-z]+)*', (t) => /^[a-z]+(,[a-z]+)*$/.test(t)],
    ['root ::= item (" " item){0,3}\nitem ::= [0-9]+ | "\\"" [^"]* "\\""', (t) => /^(\d+|"[^"]*")( (\d+|"[^"]*")){0,3}$/u.test(t)],
    ['root ::= ("ab" | "a") ("bc" | "c")? "d"', (t) => /^(ab|a)(bc|c)?d$/.test(t)],
  ];
  for (const [g, ok] of checks) {
    const node = ended(gbnfText(g));
    let done = 0;
    for (let w = 0; w < 50; w++) {
      const text = randomWalk(node, rng, { softLength: 60, stopChance: 0.2 });
      if (text === null) continue;
      done++;
      assert.ok(ok(text), `${g.slice(0, 30)}: ${JSON.stringify(text)}`);
    }
    assert.ok(done >= 30, `${g.slice(0, 30)}: only ${done} of 50 walks finished`);
  }
});
