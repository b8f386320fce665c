// JSON Schema → grammar (src/engine/grammar/json-schema-grammar.ts and friends): what each keyword
// admits on the byte-level matcher, a SchemaError for each kind of bad schema, seeded random walks
// over ~30 real-world-style schemas whose every output Ajv validates, and token masks that agree
// with byte feeding on a small vocabulary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkConstraint,
  compileGrammar,
  gbnfText,
  jsonValue,
  regexText,
  SchemaError,
  VocabIndex,
  type GrammarIR,
  type GrammarState,
} from '../../src/engine/grammar/index.js';
import { END, lit, seq } from '../../src/engine/grammar/ir.js';
import { feed } from '../../src/engine/grammar/matcher.js';
import { enter } from '../../src/engine/grammar/nodes.js';
import { frameKey, maskFrame } from '../../src/engine/grammar/token-mask.js';
import { tokenByteStrings } from '../../src/engine/grammar/token-bytes.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { validator } from '../helpers/ajv.js';
import { checkMasksAgainstBruteForce } from '../helpers/grammar-masks.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { RANDOM_DEFS, randomSchema } from '../helpers/random-schemas.js';
import { accepts, ended, randomWalk, Rng } from '../helpers/grammar-walk.js';
import { SCHEMAS } from '../helpers/schema-corpus.js';

const value = (schema: unknown) => ended(jsonValue(schema));

/** [label, schema, accepted JSON texts, rejected JSON texts] */
const CASES: [string, unknown, string[], string[]][] = [
  ['any value (true)', true, ['1', '"s"', '{"a": [null]}'], ['', 'nul']],
  ['json_object mode', { type: 'object' }, ['{}', '{"k": [1, {"x": "y"}]}'], ['[]', '"s"', '1']],
  ['pattern (unanchored)', { type: 'string', pattern: 'b+c' }, ['"abbc"', '"bc"', '"xbcx"'], ['"ac"', '"cb"', '""']],
  ['pattern (anchored)', { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' }, ['"ABC-1234"'], ['"ABC-123"', '"xABC-1234"', '"ABC-1234x"']],
  [
    'minLength / maxLength count code points',
    { type: 'string', minLength: 2, maxLength: 3 },
    ['"ab"', '"éé"', '"😀😀😀"', '"a\\n"', '"\\u00e9x"'],
    ['"a"', '"abcd"', '"😀"', '"\\ud83d\\ude00"'],
  ],
  [
    'pattern with lengths',
    { type: 'string', pattern: '^(ab)+$', minLength: 3, maxLength: 6 },
    ['"abab"', '"ababab"'],
    ['"ab"', '"abababab"', '"aba"'],
  ],
  [
    'one char class repeated, counted',
    { type: 'string', pattern: '^[a-z]{2,500}$', maxLength: 4 },
    ['"ab"', '"abcd"'],
    ['"a"', '"abcde"', '"aB"'],
  ],
  [
    'format date (leap years)',
    { type: 'string', format: 'date' },
    ['"2024-02-29"', '"2000-02-29"', '"2023-12-31"'],
    ['"2023-02-29"', '"1900-02-29"', '"2023-04-31"', '"2023-13-01"', '"2023-1-01"'],
  ],
  [
    'format date-time',
    { type: 'string', format: 'date-time' },
    ['"2024-05-01T12:30:00Z"', '"2024-05-01t23:59:59.123+05:30"'],
    ['"2024-05-01T24:00:00Z"', '"2024-05-01T12:30:00"', '"2024-05-01 12:30:00Z"'],
  ],
  ['format time', { type: 'string', format: 'time' }, ['"08:00:00-07:00"'], ['"8:00:00Z"', '"08:60:00Z"']],
  [
    'format uuid',
    { type: 'string', format: 'uuid' },
    ['"123e4567-e89b-12d3-a456-426614174000"'],
    ['"123e4567-e89b-12d3-a456-42661417400"', '"123e4567e89b12d3a456426614174000"'],
  ],
  ['format email', { type: 'string', format: 'email' }, ['"a.b+c@example.co.uk"'], ['"a@b"', '"@example.com"', '"a..b@example.com"']],
  ['integer bounds', { type: 'integer', minimum: -5, exclusiveMaximum: 12 }, ['-5', '0', '11'], ['-6', '12', '1.0', '1e1', '-0.5']],
  [
    'number bounds (decimal)',
    { type: 'number', minimum: 0.25, maximum: 2.5 },
    ['0.25', '1', '2.5', '2.50', '0.3'],
    ['0.2', '2.51', '3', '1e0', '-1'],
  ],
  ['exclusive number bounds', { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }, ['0.5', '0.001'], ['0', '0.0', '1', '1.0']],
  [
    'draft-04 exclusive form',
    { type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 3, exclusiveMaximum: true },
    ['1', '2'],
    ['0', '3'],
  ],
  ['multipleOf 1 makes numbers integers', { type: 'number', multipleOf: 1 }, ['3', '-40'], ['3.5']],
  [
    'prefixItems',
    { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], items: { type: 'boolean' } },
    ['[]', '[1]', '[1, "a", true, false]'],
    ['["a"]', '[1, 2]', '[1, "a", 3]'],
  ],
  ['prefixItems, no more items', { type: 'array', prefixItems: [{ const: 'x' }], items: false }, ['[]', '["x"]'], ['["x", "x"]']],
  [
    'required key not listed takes additionalProperties',
    { type: 'object', properties: { a: { type: 'integer' } }, required: ['b'], additionalProperties: { type: 'boolean' } },
    ['{"b": true}', '{"a": 1, "b": false}'],
    ['{"a": 1}', '{"b": 1}'],
  ],
  [
    'listed properties and additionalProperties',
    {
      type: 'object',
      properties: { a: { type: 'integer' }, ab: { type: 'boolean' } },
      required: ['a'],
      additionalProperties: { type: 'string' },
    },
    ['{"a": 1, "b": "x"}', '{"abc": "x", "a": 2}', '{"": "y", "a": 1, "ab": true}', '{"a": 1, "a\\"": "q"}'],
    ['{"a": 1, "b": 2}', '{"a": 1, "a": 2}', '{"a": "s"}', '{"b": "x"}', '{"\\u0061": "x", "a": 1}', '{"a": 1, "ab": "x"}'],
  ],
  [
    'false property: the key is left out',
    { type: 'object', properties: { a: false, b: { type: 'integer' } } },
    ['{}', '{"b": 1}'],
    ['{"a": 1}'],
  ],
  [
    'anyOf of two patterns is exact',
    {
      anyOf: [
        { type: 'string', pattern: '^a+$' },
        { type: 'string', format: 'uuid' },
      ],
    },
    ['"aaa"', '"123e4567-e89b-12d3-a456-426614174000"'],
    ['"ab"', '"b"'],
  ],
  [
    'enum next to a pattern joins it',
    { anyOf: [{ type: 'string', pattern: '^\\d+$' }, { enum: ['none', 7] }] },
    ['"12"', '"none"', '7'],
    ['"x"', '8'],
  ],
  [
    'enum next to a bounded integer joins it',
    { anyOf: [{ type: 'integer', minimum: 10, maximum: 20 }, { enum: [1.5, 99] }] },
    ['15', '1.5', '99'],
    ['9', '21', '1'],
  ],
  ['anyOf with the outer schema', { type: 'string', anyOf: [{ maxLength: 2 }, { pattern: '^x' }] }, ['"ab"', '"xyz"'], ['"abc"', '1']],
  ['enum filtered by type', { type: 'string', enum: ['a', 1, null] }, ['"a"'], ['1', 'null']],
  ['keywords without type admit their type only', { maxLength: 2 }, ['"ab"'], ['"abc"', '1', 'null']],
  ['allOf bounds: the tighter', { allOf: [{ type: 'integer', minimum: 0 }, { maximum: 5 }, { minimum: 2 }] }, ['2', '5'], ['1', '6']],
  [
    'allOf with additionalProperties false',
    { allOf: [{ properties: { a: {} }, additionalProperties: false }, { properties: { a: {}, b: {} } }] },
    ['{"a": 1}'],
    ['{"b": 1}'],
  ],
  ['$ref with sibling keywords', { $defs: { s: { type: 'string' } }, $ref: '#/$defs/s', maxLength: 1 }, ['"a"'], ['"ab"']],
  [
    'recursive $ref through anyOf',
    { $defs: { t: { anyOf: [{ type: 'integer' }, { type: 'array', items: { $ref: '#/$defs/t' } }] } }, $ref: '#/$defs/t' },
    ['1', '[1, [2, [[]]]]'],
    ['"x"', '[1, "x"]'],
  ],
  [
    'a union that names itself adds nothing',
    { $defs: { t: { anyOf: [{ type: 'integer' }, { $ref: '#/$defs/t' }] } }, anyOf: [{ $ref: '#/$defs/t' }, { type: 'null' }] },
    ['1', 'null'],
    ['"x"'],
  ],
  ['nullable', { type: 'string', nullable: true, maxLength: 1 }, ['"a"', 'null'], ['"ab"', '1']],
  [
    'annotations are ignored',
    { title: 't', description: 'd', default: 1, examples: [1], $comment: 'c', deprecated: true, readOnly: true, type: 'integer' },
    ['1'],
    ['"1"'],
  ],
];

test('JSON Schema: what each keyword admits, byte by byte', () => {
  for (const [label, schema, good, bad] of CASES) {
    const node = value(schema);
    for (const t of good) assert.ok(accepts(node, t), `${label}: ${t} should be accepted`);
    for (const t of bad) assert.ok(!accepts(node, t), `${label}: ${t} should be rejected`);
  }
});

test('JSON Schema: bad or unsupported schemas are SchemaErrors that say what and where', () => {
  const cases: [unknown, RegExp][] = [
    [{ properties: { a: { not: { type: 'string' } } } }, /unsupported JSON Schema keyword 'not' at #\/properties\/a/],
    [{ if: {}, then: {} }, /unsupported JSON Schema keyword 'if' at #/],
    [{ type: 'object', patternProperties: { '^x': {} } }, /'patternProperties' at #/],
    [{ type: 'array', contains: { type: 'integer' } }, /'contains' at #/],
    [{ type: 'array', uniqueItems: true }, /'uniqueItems' at #/],
    [{ type: 'object', dependentRequired: { a: ['b'] } }, /'dependentRequired' at #/],
    [{ type: 'object', minProperties: 2 }, /'minProperties' at #/],
    [{ type: 'integer', multipleOf: 3 }, /'multipleOf' at #/],
    [{ properties: { b: { $ref: '#/$defs/Missing' } } }, /\$ref '#\/\$defs\/Missing' does not resolve \(at #\/properties\/b\)/],
    [{ $ref: 'https://example.com/s.json' }, /only local references/],
    [
      { properties: { name: { type: 'string', minLength: 5, maxLength: 2 } } },
      /unsatisfiable schema at #\/properties\/name: minLength 5 > maxLength 2/,
    ],
    [{ type: 'array', minItems: 3, maxItems: 1 }, /minItems 3 > maxItems 1/],
    [{ type: 'number', minimum: 5, maximum: 1 }, /minimum 5 > maximum 1/],
    [{ type: 'integer', minimum: 0.2, maximum: 0.8 }, /unsatisfiable schema at #/],
    [{ enum: [] }, /empty enum/],
    [{ properties: { x: { type: 'nonsense' } } }, /unknown type 'nonsense' at #\/properties\/x/],
    [{ type: 'object', properties: {}, required: ['a'], additionalProperties: false }, /required property 'a' is not allowed/],
    [{ type: 'string', format: 'credit-card' }, /unsupported format 'credit-card' at #/],
    [{ type: 'string', pattern: '(?=x)' }, /lookahead/],
    [{ type: 'string', pattern: '^a{3}$', maxLength: 2 }, /unsatisfiable schema at #/],
    [{ type: 'array', prefixItems: [{ type: 'integer' }], items: false, minItems: 2 }, /minItems 2 but at most 1/],
    [false, /unsatisfiable schema at #/],
    [{ type: 'string', enum: [1] }, /unsatisfiable schema at #/],
    [{ required: 'a' }, /'required' must be a list/],
    [{ type: 'string', maxLength: -1 }, /'maxLength' must be a non-negative integer/],
  ];
  for (const [schema, message] of cases) {
    assert.throws(
      () => checkConstraint(jsonValue(schema)),
      (e: Error) => e instanceof SchemaError && message.test(e.message),
      `${JSON.stringify(schema)} → ${message}`,
    );
  }
  // Other grammar errors are not the user's: checkConstraint lets them pass (the worker decodes unconstrained).
  assert.doesNotThrow(() => checkConstraint(lit('')));
  assert.doesNotThrow(() => checkConstraint(seq([jsonValue({ type: 'object' }), END])));
});

test('JSON Schema: random walks over real-world-style schemas give only values Ajv accepts', () => {
  for (const [name, schema] of SCHEMAS) {
    const node = value(schema);
    const validate = validator(schema);
    const rng = new Rng(name.length * 7919 + 1);
    const walks = 50;
    let done = 0;
    for (let w = 0; w < walks; w++) {
      const text = randomWalk(node, rng, { softLength: 200, stopChance: 0.3 });
      if (text === null) continue;
      done++;
      const err = validate(JSON.parse(text));
      if (err) assert.fail(`${name}: ${JSON.stringify(text)}: ${err}`);
    }
    assert.ok(done >= walks * 0.75, `${name}: only ${done} of ${walks} walks finished`);
  }
});

test('a counted string keeps its exact count in the frame; its masks are one walk per sub-state', () => {
  const node = value({ type: 'string', minLength: 5, maxLength: 1000 });
  let st = enter(node, null);
  const keys = new Set<string>();
  const horizon = 16;
  for (const b of new TextEncoder().encode(`"${'é'.repeat(999)}`)) {
    st = feed(st, b)!;
    keys.add(frameKey(maskFrame(st), horizon));
  }
  assert.ok(feed(st, 0x22) !== null, '999 code points are fine');
  const full = feed(st, 0xc3);
  assert.ok(full !== null && feed(feed(full, 0xa9)!, 0xc3) === null, 'the 1001st code point is not');
  // One key per sub-state of the string (body, after a UTF-8 lead byte, …), whatever the count.
  assert.ok(keys.size <= 4, `${keys.size} distinct keys`);
});

// A small vocabulary: every byte alone, and pieces of JSON a tokenizer would have.
const PIECES = [
  '{"',
  '"}',
  '":',
  '": ',
  ', "',
  '"]',
  '[{"',
  '}]',
  '12',
  '-0',
  '0.',
  '.5',
  'e+',
  'true',
  'null',
  'ABC',
  '-12',
  '34-',
  'é',
  '😀',
  '\\"',
  '\\u00',
  'ab',
  'ba',
  'T1',
  ':00',
  'Z"',
];
const SMALL_TOKENS = [...Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)), ...PIECES.map((p) => new TextEncoder().encode(p))];
const SMALL_END = SMALL_TOKENS.length;

test('token masks agree with byte feeding on a small vocabulary (patterns, counts, bounded numbers, formats)', () => {
  const vocab = new VocabIndex(SMALL_TOKENS);
  const roots: GrammarIR[] = [
    jsonValue({
      type: 'object',
      properties: {
        sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{2,4}$' },
        n: { type: 'number', minimum: -12.5, maximum: 34 },
        s: { type: 'string', minLength: 2, maxLength: 5 },
        t: { type: 'string', format: 'date-time' },
        l: { type: 'array', prefixItems: [{ const: true }], items: { type: 'integer', maximum: 12 } },
      },
      required: ['sku', 'n'],
    }),
    regexText('(ab|ba)+-?\\d{1,3}'),
  ];
  const mask = new Uint8Array(SMALL_END + 1);
  const rng = new Rng(3);
  let states = 0;
  for (const root of roots) {
    const g = compileGrammar({ root: seq([root, END]), endTokenIds: [SMALL_END] }, vocab)!;
    for (let w = 0; w < 30; w++) {
      let st: GrammarState = g.start();
      for (let step = 0; step < 60; step++) {
        g.allowedTokens(st, mask);
        const allowed: number[] = [];
        for (let id = 0; id <= SMALL_END; id++) {
          const ok = id === SMALL_END ? g.isComplete(st) : g.tryAdvance(st, id) !== null;
          assert.equal(
            mask[id] === 1,
            ok,
            `token ${id} (${id < SMALL_END ? JSON.stringify(new TextDecoder().decode(SMALL_TOKENS[id])) : 'end'})`,
          );
          if (ok) allowed.push(id);
        }
        states++;
        assert.ok(allowed.length > 0, 'never a dead end');
        const id = allowed[Math.floor(rng.next() * allowed.length)];
        if (id === SMALL_END) break;
        st = g.advance(st, id);
      }
    }
  }
  assert.ok(states > 500);
});

test('masks equal a brute-force check of every token on the real 152k vocabulary', () => {
  const tk = loadTokenizer(TINY_CHAT);
  const vocab = new VocabIndex(tokenByteStrings(tk));
  const end = tk.tokenToId('<|im_end|>')!;
  const schema = {
    type: 'object',
    properties: {
      sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
      name: { type: 'string', minLength: 3, maxLength: 12 },
      when: { type: 'string', format: 'date-time' },
      price: { type: 'number', exclusiveMinimum: 0, maximum: 999.99 },
      count: { type: 'integer', minimum: -3, maximum: 250 },
      note: { type: 'string', maxLength: 300 },
    },
    required: ['sku', 'name'],
  };
  const text = JSON.stringify(
    { sku: 'ABC-1234', name: 'Widget "é"', when: '2024-02-29T23:59:59.5+01:00', price: 12.5, count: 200, note: 'Hello world, '.repeat(8) },
    null,
    1,
  );
  const g = compileGrammar({ root: seq([jsonValue(schema), END]), endTokenIds: [end] }, vocab)!;
  const regex = compileGrammar({ root: seq([regexText('[a-z]+( [a-z]+){0,3}\\.'), END]), endTokenIds: [end] }, vocab)!;
  const gbnf = compileGrammar(
    {
      root: seq([gbnfText('root ::= "[" (item ("," " "? item)*)? "]"\nitem ::= [0-9]+ | "\\"" [^"\\n]* "\\"" | root'), END]),
      endTokenIds: [end],
    },
    vocab,
  )!;
  const states = checkMasksAgainstBruteForce(
    [
      [g, text],
      [regex, 'the quick brown fox.'],
      [gbnf, '[1, "two words", [3, [], ["x"]], 42]'],
    ],
    tk,
    vocab,
    3,
  );
  assert.ok(states > 30);
});

test('random schemas: each compiles or is a SchemaError, and every walk through it validates with Ajv', () => {
  const rng = new Rng(2024);
  let compiled = 0;
  for (let i = 0; i < 150; i++) {
    const schema = { ...randomSchema(rng), $defs: RANDOM_DEFS };
    let node;
    try {
      node = value(schema);
    } catch (err) {
      if (err instanceof SchemaError) continue;
      throw err;
    }
    compiled++;
    const validate = validator(schema);
    for (let w = 0; w < 8; w++) {
      const text = randomWalk(node, rng, { softLength: 80, stopChance: 0.3 });
      if (text === null) continue;
      const err = validate(JSON.parse(text));
      if (err) assert.fail(`${JSON.stringify(schema)}: ${JSON.stringify(text)}: ${err}`);
    }
  }
  assert.ok(compiled > 100, `${compiled} of 150 compiled`);
});
