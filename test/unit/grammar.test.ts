// Grammar-constrained tool calls, with the real Qwen3 vocabulary (151,669 tokens): valid calls are
// accepted token by token, invalid continuations are masked, random walks through the masks only
// ever produce valid calls, and the cached masks equal a brute-force check of every token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rng } from '../../src/engine/sampler.js';
import { GrammarError, SchemaError, VocabIndex, type GrammarState, type ToolGrammar } from '../../src/engine/grammar/index.js';
import { tokenByteStrings } from '../../src/engine/grammar/token-bytes.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { checkMasksAgainstBruteForce } from '../helpers/grammar-masks.js';
import { compileToolGrammar, type ToolGrammarSpec } from '../helpers/tool-grammar.js';

const tk = loadTokenizer(TINY_CHAT);
let started = performance.now();
const tokenBytes = tokenByteStrings(tk);
const bytesMs = performance.now() - started;
started = performance.now();
const vocab = new VocabIndex(tokenBytes);
const trieMs = performance.now() - started;
const IM_END = tk.tokenToId('<|im_end|>')!;
const ENDOFTEXT = tk.tokenToId('<|endoftext|>')!;
const END_IDS = [IM_END, ENDOFTEXT];
const ROW = 151936; // the model's logits row is longer than the tokenizer's vocabulary

type Schema = Record<string, unknown>;

const WEATHER = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};
const CALCULATOR = {
  name: 'calculate',
  parameters: {
    type: 'object',
    properties: {
      a: { type: 'number' },
      b: { type: 'number' },
      op: { enum: ['add', 'sub', 'mul', 'div'] },
      precision: { type: ['integer', 'null'] },
    },
    required: ['a', 'b', 'op'],
  },
};
const CREATE_EVENT = {
  name: 'create_event',
  parameters: {
    type: 'object',
    properties: {
      title: { type: 'string' },
      attendees: {
        type: 'array',
        items: { type: 'object', properties: { email: { type: 'string' }, optional: { type: 'boolean' } }, required: ['email'] },
        maxItems: 3,
      },
      when: {
        type: 'object',
        properties: { day: { type: 'integer' }, hour: { anyOf: [{ type: 'integer' }, { type: 'string' }] } },
        required: ['day'],
      },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['title', 'when'],
  },
};

function grammar(spec: Partial<ToolGrammarSpec> & { tools: ToolGrammarSpec['tools'] }): ToolGrammar {
  const g = compileToolGrammar({ format: 'hermes', endTokenIds: END_IDS, ...spec }, vocab);
  assert.ok(g);
  return g;
}

const mask = new Uint8Array(ROW);

/** Advances through `text` (as the tokenizer splits it), checking each token is in the mask first. */
function feedText(g: ToolGrammar, state: GrammarState, text: string): GrammarState {
  const ids = tk.encode(text);
  ids.forEach((id, i) => {
    g.allowedTokens(state, mask);
    assert.equal(mask[id], 1, `${JSON.stringify(tk.decode([id]))} should be allowed after ${JSON.stringify(tk.decode(ids.slice(0, i)))}`);
    state = g.advance(state, id);
  });
  return state;
}

/** Whether the first token of `next` (as the tokenizer splits it) is allowed after `prefix`. */
function firstTokenAllowed(g: ToolGrammar, prefix: string, next: string): boolean {
  const state = feedText(g, g.start(), prefix);
  g.allowedTokens(state, mask);
  const id = tk.encode(next)[0];
  assert.equal(mask[id] === 1, g.tryAdvance(state, id) !== null, 'mask and tryAdvance agree');
  return mask[id] === 1;
}

const CALL = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;

// ---------------------------------------------------------------------------------------------
// (1) valid calls are accepted

test('a valid hermes call is allowed token by token, then only an end token', () => {
  const g = grammar({ tools: [WEATHER, CALCULATOR] });
  const text = CALL('get_weather', '{"city": "Paris, \\"la ville\\" \\u00e9 中文 😀", "unit": "celsius"}');
  let st = feedText(g, g.start(), text);
  assert.ok(g.isComplete(st));
  g.allowedTokens(st, mask);
  assert.equal(mask[IM_END], 1);
  assert.equal(mask[tk.encode('Hello')[0]], 0, 'no prose after the call');
  st = g.advance(st, IM_END);
  g.allowedTokens(st, mask);
  assert.equal(mask.indexOf(1), -1, 'nothing after the end token');
});

test('several calls (required) and a forced single call (maxCalls 1)', () => {
  const two = CALL('calculate', '{"a": 1.5e3, "b": -2, "op": "mul", "precision": null}') + '\n' + CALL('get_weather', '{"city": "Oslo"}');
  const g = grammar({ tools: [WEATHER, CALCULATOR] });
  assert.ok(g.isComplete(feedText(g, g.start(), two)));

  const forced = grammar({ tools: [WEATHER], maxCalls: 1 });
  const st = feedText(forced, forced.start(), CALL('get_weather', '{"city": "Oslo"}') + '\n');
  forced.allowedTokens(st, mask);
  assert.equal(mask[IM_END], 1);
  assert.equal(mask[tk.tokenToId('<tool_call>')!], 0, 'a second call is masked');
});

test('nested objects and arrays are accepted', () => {
  const g = grammar({ tools: [CREATE_EVENT] });
  const args =
    '{"title": "Sync", "attendees": [{"email": "a@b.c", "optional": true}, {"email": "d@e.f"}], "when": {"day": 3, "hour": "noon"}, "tags": []}';
  assert.ok(g.isComplete(feedText(g, g.start(), CALL('create_event', args))));
});

test('reasoning first: free text until </think>, then the call', () => {
  const g = grammar({ tools: [WEATHER], afterReasoningEnd: '</think>' });
  let st = feedText(g, g.start(), 'The user wants weather. I could write <tool_call> here, or {"name": 1}.\n');
  g.allowedTokens(st, mask);
  assert.equal(mask[IM_END], 0, 'the turn cannot end while reasoning');
  st = feedText(g, st, '</think>\n\n');
  assert.equal(firstTokenAllowed(g, 'x</think>\n\n', 'Sure'), false, 'prose after the reasoning is masked');
  assert.ok(g.isComplete(feedText(g, st, CALL('get_weather', '{"city": "Rome"}'))));
});

test('fam1 XML calls: text, enum and JSON-typed parameters', () => {
  const g = grammar({ format: 'fam1_coder', tools: [WEATHER, CALCULATOR] });
  const text =
    '<tool_call>\n<function=calculate>\n<parameter=op>\nadd\n</parameter>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n-0.5\n</parameter>\n</function>\n</tool_call>\n' +
    '<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n(any "text")\n</parameter>\n</function>\n</tool_call>';
  assert.ok(g.isComplete(feedText(g, g.start(), text)));
  const call = '<tool_call>\n<function=calculate>\n<parameter=op>\n';
  const xg = grammar({ format: 'fam1_coder', tools: [CALCULATOR] });
  assert.equal(firstTokenAllowed(xg, call, 'pow'), false, 'an enum parameter takes only its values');
  assert.equal(firstTokenAllowed(xg, '<tool_call>\n<function=calculate>\n<parameter=a>\n', '"'), false, 'a number parameter is not text');
  assert.equal(firstTokenAllowed(xg, call + 'add\n</parameter>\n', '</function>'), false, 'required a and b are missing');
});

test('an unknown format, or no tools, compiles to null (decoding stays unconstrained)', () => {
  assert.equal(compileToolGrammar({ format: 'nonesuch', tools: [WEATHER], endTokenIds: END_IDS }, vocab), null);
  assert.equal(compileToolGrammar({ format: 'hermes', tools: [], endTokenIds: END_IDS }, vocab), null);
});

// ---------------------------------------------------------------------------------------------
// (2) invalid continuations are masked

test('invalid continuations are masked, valid ones are not', () => {
  const g = grammar({ tools: [WEATHER, CALCULATOR] });
  const open = '<tool_call>\n{"name": "';
  assert.equal(firstTokenAllowed(g, '', 'Hello'), false, 'text before <tool_call>');
  assert.equal(firstTokenAllowed(g, '', '<tool_call>'), true);
  assert.equal(firstTokenAllowed(g, open, 'search'), false, 'a tool name that is not offered');
  assert.equal(firstTokenAllowed(g, open, 'get'), true);
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"', 'country'), false, 'an unknown property');
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": ', '"'), false, 'a string where a number is required');
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": ', '4'), true);
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": 1, "precision": 2', '.'), false, 'a fraction for an integer');
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": 1, "precision": 2', ','), true);
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": 1, "b": 2, "op": "', 'pow'), false, 'a value outside the enum');
  assert.equal(firstTokenAllowed(g, open + 'calculate", "arguments": {"a": 1, "b": 2, "op": "', 'div'), true);
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"unit": "celsius"', '}'), false, 'required city is missing');
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"unit": "celsius"', ','), true);
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"city": "x", "', 'city'), false, 'a repeated property');
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"city": "line', '\n'), false, 'a raw newline inside a string');
  assert.equal(firstTokenAllowed(g, open + 'get_weather", "arguments": {"city": "x"}}', '\n</tool_call>'), true);
  assert.equal(
    firstTokenAllowed(g, open + 'get_weather", "arguments": {"city": "x"}', '</tool_call>'),
    false,
    'the call object is not closed yet',
  );
  g.allowedTokens(g.start(), mask);
  assert.equal(mask[IM_END], 0, 'the turn cannot end before a call');
  assert.equal(mask[ENDOFTEXT], 0);
});

test('whitespace is bounded, so a model cannot idle forever', () => {
  const g = grammar({ tools: [WEATHER] });
  let st = feedText(g, g.start(), '<tool_call>\n{"name": "get_weather",');
  const space = tk.encode(' ')[0];
  let spaces = 0;
  while (g.tryAdvance(st, space) !== null && spaces < 100) {
    st = g.advance(st, space);
    spaces++;
  }
  assert.ok(spaces >= 1 && spaces < 100, `${spaces} spaces in one gap`);
  assert.throws(() => g.advance(st, space), GrammarError);
});

// ---------------------------------------------------------------------------------------------
// (3) random walks through the masks produce valid calls

/** Tokens whose text has JSON/XML punctuation: picking them half the time makes walks finish. */
const structural = (() => {
  const s = new Uint8Array(vocab.size);
  for (let id = 0; id < vocab.size; id++) if (/["{}[\],:<>/0-9]/.test(tk.decode([id]))) s[id] = 1;
  return s;
})();

/**
 * Picks allowed tokens at random, half the time a structural one. Now and then it writes `closer`
 * (a closing tag that free text would otherwise hardly ever stumble on) whole.
 */
function randomWalk(g: ToolGrammar, rng: Rng, maxTokens: number, closer: readonly number[] = []): { text: string; complete: boolean } {
  const planned: number[] = [];
  let st = g.start();
  const ids: number[] = [];
  const all: number[] = [];
  const picks: number[] = [];
  for (let step = 0; step < maxTokens; step++) {
    g.allowedTokens(st, mask);
    all.length = picks.length = 0;
    for (let id = 0; id < ROW; id++) {
      if (mask[id] !== 1) continue;
      all.push(id);
      if (structural[id] === 1) picks.push(id);
    }
    assert.ok(all.length > 0, `no token allowed after ${JSON.stringify(tk.decode(ids))}`);
    assert.equal(mask[IM_END], g.isComplete(st) ? 1 : 0, 'the end token is allowed exactly where the grammar may end');
    if (g.isComplete(st) && rng.next() < 0.5) return { text: tk.decode(ids), complete: true };
    if (planned.length > 0 && mask[planned[0]] !== 1) planned.length = 0;
    if (planned.length === 0 && closer.length > 0 && mask[closer[0]] === 1 && rng.next() < 0.1) planned.push(...closer);
    const from = picks.length > 0 && rng.next() < 0.5 ? picks : all;
    const id = planned.shift() ?? from[Math.floor(rng.next() * from.length)];
    if (END_IDS.includes(id)) return { text: tk.decode(ids), complete: true };
    st = g.advance(st, id);
    ids.push(id);
  }
  return { text: tk.decode(ids), complete: false };
}

/** The end of the JSON value starting at text[i] (brackets balanced, strings skipped). */
function jsonEnd(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '"') {
      for (j++; text[j] !== '"'; j++) if (text[j] === '\\') j++;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    if (depth === 0) return j + 1;
  }
  return -1;
}

function hermesCalls(text: string): { name: string; arguments: unknown }[] {
  const calls: { name: string; arguments: unknown }[] = [];
  let rest = text.trimStart();
  while (rest.length > 0) {
    assert.ok(rest.startsWith('<tool_call>'), `expected a call: ${JSON.stringify(rest.slice(0, 40))}`);
    rest = rest.slice('<tool_call>'.length).trimStart();
    const end = jsonEnd(rest, 0);
    calls.push(JSON.parse(rest.slice(0, end)) as { name: string; arguments: unknown });
    rest = rest.slice(end).trimStart();
    assert.ok(rest.startsWith('</tool_call>'));
    rest = rest.slice('</tool_call>'.length).trimStart();
  }
  return calls;
}

/** The few schema rules the test tools use. */
function validate(v: unknown, s: Schema, path = '$'): void {
  if (Array.isArray(s.enum)) return assert.ok(s.enum.includes(v), `${path}: ${JSON.stringify(v)} not in enum`);
  if (Array.isArray(s.anyOf)) {
    const ok = s.anyOf.some((alt) => {
      try {
        validate(v, alt as Schema, path);
        return true;
      } catch {
        return false;
      }
    });
    return assert.ok(ok, `${path}: no alternative matches`);
  }
  const types = Array.isArray(s.type) ? s.type : [s.type];
  const typeOf = v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
  assert.ok(types.includes(typeOf) || (typeOf === 'integer' && types.includes('number')), `${path}: ${typeOf} is not ${types}`);
  if (typeOf === 'object') {
    const o = v as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, Schema>;
    for (const k of (s.required ?? []) as string[]) assert.ok(k in o, `${path}: missing ${k}`);
    for (const [k, x] of Object.entries(o)) {
      assert.ok(k in props, `${path}: unexpected ${k}`);
      validate(x, props[k], `${path}.${k}`);
    }
  }
  if (typeOf === 'array') {
    const a = v as unknown[];
    if (typeof s.maxItems === 'number') assert.ok(a.length <= s.maxItems, `${path}: too many items`);
    a.forEach((x, i) => validate(x, s.items as Schema, `${path}[${i}]`));
  }
}

for (const [label, tools] of [
  ['weather', [WEATHER]],
  ['calculator', [CALCULATOR]],
  ['nested objects and arrays', [CREATE_EVENT]],
  ['all three', [WEATHER, CALCULATOR, CREATE_EVENT]],
] as const) {
  test(`random walks through the masks give valid hermes calls: ${label}`, () => {
    const g = grammar({ tools: [...tools] });
    const rng = new Rng(label.length * 7919);
    let complete = 0;
    const walks = 6;
    for (let w = 0; w < walks; w++) {
      const { text, complete: done } = randomWalk(g, rng, 300);
      if (!done) continue;
      complete++;
      const calls = hermesCalls(text);
      assert.ok(calls.length >= 1);
      for (const call of calls) {
        const tool = tools.find((t) => t.name === call.name);
        assert.ok(tool, `unknown tool ${call.name}`);
        validate(call.arguments, tool.parameters as Schema);
      }
    }
    assert.ok(complete >= walks / 2, `only ${complete} of ${walks} walks finished in 300 tokens`);
  });
}

test('random walks give valid fam1 XML calls', () => {
  const tools = [WEATHER, CALCULATOR];
  const g = grammar({ format: 'fam1_coder', tools });
  const rng = new Rng(42);
  let complete = 0;
  const closer = tk.encode('\n</parameter>\n');
  for (let w = 0; w < 6; w++) {
    const { text, complete: done } = randomWalk(g, rng, 300, closer);
    if (!done) continue;
    complete++;
    const re = /<tool_call>\s*<function=([^>]*)>([\s\S]*?)<\/function>\s*<\/tool_call>/g;
    assert.equal(text.replace(re, '').trim(), '', 'nothing but calls');
    const calls = [...text.matchAll(re)];
    for (const [, name, body] of calls) {
      const tool = tools.find((t) => t.name === name)!;
      assert.ok(tool, `unknown tool ${name}`);
      const args: Record<string, unknown> = {};
      for (const [, key, raw] of body.matchAll(/<parameter=([^>]*)>\n?([\s\S]*?)\n?<\/parameter>/g)) {
        const s = (tool.parameters.properties as Record<string, Schema>)[key];
        assert.ok(s, `unexpected parameter ${key}`);
        assert.ok(!(key in args), `repeated parameter ${key}`);
        args[key] = s.type === 'string' || Array.isArray(s.enum) ? raw : JSON.parse(raw);
      }
      validate(args, tool.parameters as Schema);
    }
  }
  assert.ok(complete >= 3, `only ${complete} of 6 walks finished`);
});

// ---------------------------------------------------------------------------------------------
// The cached masks are exactly the tokens the matcher accepts

test('masks equal a brute-force check of every token (cache and frontier logic)', () => {
  const cases: [ToolGrammar, string][] = [
    [grammar({ tools: [WEATHER, CALCULATOR] }), CALL('calculate', '{"a": 12, "b": 3.5e-2, "op": "add"}')],
    [grammar({ tools: [CREATE_EVENT] }), CALL('create_event', '{"title": "a\\"b", "when": {"day": 1}, "attendees": [{"email": "x"}]}')],
    [
      grammar({ format: 'fam1_coder', tools: [WEATHER], afterReasoningEnd: '</think>' }),
      'ok </thi</think>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nA </para\n</parameter>\n</function>\n</tool_call>',
    ],
  ];
  const states = checkMasksAgainstBruteForce(cases, tk, vocab, 2);
  assert.ok(states > 30);
});

test('a byte-level vocabulary: partial UTF-8 tokens are usable inside strings only as valid UTF-8', () => {
  // Tokens: each byte of the prefix alone, then 中 as three single-byte tokens, the closing text, an empty token.
  const prefix = new TextEncoder().encode('<tool_call>{"name": "f", "arguments": {"s": "');
  const n = prefix.length;
  const [lead, cont1, cont2, close, empty, end] = [n, n + 1, n + 2, n + 3, n + 4, n + 5];
  const tokens = [
    ...[...prefix].map((b) => Uint8Array.of(b)),
    Uint8Array.of(0xe4),
    Uint8Array.of(0xb8),
    Uint8Array.of(0xad),
    new TextEncoder().encode('"}}</tool_call>'),
    new Uint8Array(0),
  ];
  const small = new VocabIndex(tokens);
  const g = compileToolGrammar(
    { format: 'hermes', tools: [{ name: 'f', parameters: { type: 'object', properties: { s: { type: 'string' } } } }], endTokenIds: [end] },
    small,
  )!;
  let st = g.start();
  for (let id = 0; id < n; id++) st = g.advance(st, id);
  const out = new Uint8Array(end + 1);
  g.allowedTokens(st, out);
  assert.deepEqual(
    [out[lead], out[cont1], out[close], out[empty], out[end]],
    [1, 0, 1, 0, 0],
    'a continuation byte cannot start a character',
  );
  st = g.advance(st, lead); // 0xE4: two continuation bytes due
  g.allowedTokens(st, out);
  assert.deepEqual([out[lead], out[cont1], out[cont2], out[close]], [0, 1, 1, 0], 'only continuation bytes');
  st = g.advance(g.advance(st, cont1), cont2);
  st = g.advance(st, close);
  g.allowedTokens(st, out);
  assert.equal(out[end], 1);
  assert.ok(g.isComplete(g.advance(st, end)));
});

// ---------------------------------------------------------------------------------------------
// The JSON-schema subset, on a vocabulary of single bytes (every text is spelled byte by byte)

const byteVocab = new VocabIndex(Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)));
const BYTE_END = 256;

/** Whether `args` is accepted, complete, as the arguments of a one-tool hermes call with `schema`. */
function argsAccepted(schema: unknown, args: string): boolean {
  const g = compileToolGrammar({ format: 'hermes', tools: [{ name: 'f', parameters: schema }], endTokenIds: [BYTE_END] }, byteVocab)!;
  let st: GrammarState | null = g.start();
  for (const b of new TextEncoder().encode(`<tool_call>{"name": "f", "arguments": ${args}}</tool_call>`)) {
    st = g.tryAdvance(st, b);
    if (st === null) return false;
  }
  return g.tryAdvance(st, BYTE_END) !== null;
}

test('JSON-schema subset: the values each construct admits', () => {
  // [label, schema of one value (wrapped as the required property v), accepted, rejected]
  const values: [string, unknown, string[], string[]][] = [
    ['integer', { type: 'integer' }, ['0', '-12', '123456'], ['1.5', '01', '"1"', '1e3', '-']],
    ['number', { type: 'number' }, ['0.5', '-1e-3', '2E+10', '7'], ['.5', '1.', 'NaN', '+1']],
    ['type list', { type: ['string', 'null'] }, ['"a"', 'null'], ['1', 'true']],
    ['anyOf', { anyOf: [{ type: 'integer' }, { type: 'boolean' }] }, ['3', 'false'], ['"3"', 'null']],
    ['nullable', { type: 'string', nullable: true }, ['"x"', 'null'], ['0']],
    ['enum of numbers (one a prefix of another)', { enum: [1, 12, 'x'] }, ['1', '12', '"x"'], ['2', '123', '"y"', '12.0']],
    ['const', { const: 'on' }, ['"on"'], ['"off"', '"o"']],
    ['string escapes', { type: 'string' }, ['"a\\"b\\\\c\\u00e9\\n"', '"中"'], ['"\\x"', '"\\u12"', '"a\tb"']],
    [
      'array bounds',
      { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 2 },
      ['[1]', '[1, 2]', '[ 1 ,2 ]'],
      ['[]', '[1, 2, 3]', '[1,]', '["a"]'],
    ],
    ['no keywords: any JSON', { description: 'anything' }, ['"s"', '[1, {"y": null}]'], ['', '{"a"}']],
  ];
  // [label, parameters schema, accepted arguments, rejected arguments]
  const objects: [string, unknown, string[], string[]][] = [
    [
      'additionalProperties',
      { type: 'object', additionalProperties: { type: 'boolean' } },
      ['{}', '{"any": true, "k": false}'],
      ['{"k": 1}'],
    ],
    [
      'listed properties only',
      { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } }, required: ['b'] },
      ['{"b": ""}', '{"a": 1, "b": "x"}', '{"b": "x", "a": 1}'],
      ['{}', '{"a": 1}', '{"b": "x", "c": 1}', '{"b": "x", "b": "y"}', '{"b": "x",}'],
    ],
    [
      'allOf',
      { allOf: [{ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }, { properties: { b: { type: 'boolean' } } }] },
      ['{"a": 1, "b": true}', '{"a": 2}'],
      ['{"b": true}'],
    ],
    [
      'local $ref, recursive',
      {
        type: 'object',
        properties: { node: { $ref: '#/$defs/tree' } },
        $defs: {
          tree: {
            type: 'object',
            properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/tree' } } },
            required: ['v'],
          },
        },
      },
      ['{"node": {"v": 1, "kids": [{"v": 2, "kids": []}]}}'],
      ['{"node": {"v": 1, "kids": [{"kids": []}]}}'],
    ],
    ['no schema: any object', undefined, ['{}', '{"x": [true]}'], ['[]', '1']],
  ];
  const cases = [
    ...values.map(
      ([l, s, good, bad]) =>
        [
          l,
          { type: 'object', properties: { v: s }, required: ['v'] },
          good.map((v) => `{"v": ${v}}`),
          bad.map((v) => `{"v": ${v}}`),
        ] as const,
    ),
    ...objects,
  ];
  for (const [label, schema, good, bad] of cases) {
    for (const v of good) assert.ok(argsAccepted(schema, v), `${label}: ${v} should be accepted`);
    for (const v of bad) assert.ok(!argsAccepted(schema, v), `${label}: ${v} should be rejected`);
  }
});

test('a keyword the grammar cannot enforce is a SchemaError, not a silently looser grammar', () => {
  const schema = { type: 'object', properties: { v: { not: { type: 'string' } } } };
  assert.throws(
    () => argsAccepted(schema, '{"v": 1}'),
    (e: Error) => e instanceof SchemaError && /'not' at #\/properties\/v/.test(e.message),
  );
});

test('tools a format cannot tell apart compile to null instead of throwing', () => {
  const tools = [{ name: 'a' }, { name: 'a>b' }]; // `<function=a>` is a prefix of `<function=a>b>`
  assert.equal(compileToolGrammar({ format: 'fam1_coder', tools, endTokenIds: [BYTE_END] }, byteVocab), null);
  assert.ok(compileToolGrammar({ format: 'hermes', tools, endTokenIds: [BYTE_END] }, byteVocab), 'quoted names are distinct in hermes');
});

// ---------------------------------------------------------------------------------------------
// (4) how long a mask takes (printed, not asserted: the machine is shared)

test('mask time per token on the 152k vocabulary', () => {
  // A fresh index, so "first" is a real cache miss (the other tests warmed the shared one).
  const fresh = new VocabIndex(tokenBytes);
  const g = compileToolGrammar(
    { format: 'hermes', tools: [WEATHER, CALCULATOR, CREATE_EVENT], endTokenIds: END_IDS, afterReasoningEnd: '</think>' },
    fresh,
  )!;
  const points: [string, string][] = [
    ['reasoning (free text)', 'Let me think about the weather'],
    ['before <tool_call>', 'x</think>\n\n'],
    ['tool name', 'x</think>\n\n<tool_call>\n{"name": "'],
    ['property key', 'x</think>\n\n<tool_call>\n{"name": "create_event", "arguments": {"'],
    ['inside a string', 'x</think>\n\n<tool_call>\n{"name": "create_event", "arguments": {"title": "Weekly'],
    ['inside a number', 'x</think>\n\n<tool_call>\n{"name": "calculate", "arguments": {"a": 12'],
    ['after a value', 'x</think>\n\n<tool_call>\n{"name": "calculate", "arguments": {"a": 12,'],
  ];
  const lines: string[] = [];
  for (const [label, text] of points) {
    let st = g.start();
    for (const id of tk.encode(text)) st = g.advance(st, id);
    let t = performance.now();
    g.allowedTokens(st, mask);
    const cold = performance.now() - t;
    const reps = 20;
    t = performance.now();
    for (let r = 0; r < reps; r++) g.allowedTokens(st, mask);
    const warm = (performance.now() - t) / reps;
    let allowed = 0;
    for (let id = 0; id < ROW; id++) allowed += mask[id];
    lines.push(
      `  ${label.padEnd(24)} first ${cold.toFixed(2).padStart(7)} ms, then ${warm.toFixed(3).padStart(6)} ms  (${allowed} tokens allowed)`,
    );
    assert.ok(allowed > 0);
  }
  console.log(
    `vocabulary index: token bytes ${bytesMs.toFixed(0)} ms, trie ${trieMs.toFixed(0)} ms (${vocab.trie.nodeCount} nodes)\n` +
      `mask time, ${vocab.size} tokens (first = cache miss, then cached):\n${lines.join('\n')}`,
  );
});
