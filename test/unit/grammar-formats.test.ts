// Tool-call grammars of every wire format, with the real Qwen3 vocabulary and the real parsers:
// valid calls are accepted token by token and parse back to the intended calls, invalid
// continuations are masked, and seeded random walks through the masks only ever produce text that
// the format's parser turns into calls of allowed tools with schema-valid arguments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rng } from '../../src/engine/sampler.js';
import { VocabIndex, type GrammarState, type ToolGrammar } from '../../src/engine/grammar/index.js';
import { tokenByteStrings } from '../../src/engine/grammar/token-bytes.js';
import { createToolCallParser, type ToolSchema } from '../../src/chat/tool-formats/registry.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { checkMasksAgainstBruteForce } from '../helpers/grammar-masks.js';
import { compileToolGrammar, type ToolDef, type ToolGrammarSpec } from '../helpers/tool-grammar.js';

const tk = loadTokenizer(TINY_CHAT);
const vocab = new VocabIndex(tokenByteStrings(tk));
const IM_END = tk.tokenToId('<|im_end|>')!;
const END_IDS = [IM_END, tk.tokenToId('<|endoftext|>')!];
const ROW = 151936;
const mask = new Uint8Array(ROW);

type Schema = Record<string, unknown>;

const WEATHER = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer' } },
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
const SEARCH = {
  name: 'search',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string' },
      exact: { type: 'boolean' },
      filters: { type: 'object' },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
      when: {
        type: 'object',
        properties: { day: { type: 'integer' }, hour: { anyOf: [{ type: 'integer' }, { type: 'string' }] } },
        required: ['day'],
      },
    },
    required: ['query'],
  },
};
const ALL = [WEATHER, CALCULATOR, SEARCH];

const FORMATS = ['fam2', 'fam3', 'fam4_xml', 'bare_json', 'llama3_json', 'glm4', 'pythonic'] as const;
type Format = (typeof FORMATS)[number] | 'hermes' | 'fam1_coder';

function grammar(format: Format, tools: ToolDef[], extra: Partial<ToolGrammarSpec> = {}): ToolGrammar {
  const g = compileToolGrammar({ format, tools, endTokenIds: END_IDS, ...extra }, vocab);
  assert.ok(g, `${format} compiles`);
  return g;
}

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

/**
 * Whether `next` (as the tokenizer splits it) may follow `prefix`, token by token; the mask and
 * tryAdvance must agree on every token.
 */
function continuationAllowed(g: ToolGrammar, prefix: string, next: string): boolean {
  let state = feedText(g, g.start(), prefix);
  for (const id of tk.encode(next)) {
    g.allowedTokens(state, mask);
    const st = g.tryAdvance(state, id);
    assert.equal(mask[id] === 1, st !== null, 'mask and tryAdvance agree');
    if (st === null) return false;
    state = st;
  }
  return true;
}

interface Call {
  name: string;
  arguments: Record<string, unknown>;
}

/** What the format's real parser makes of `text`: the text events joined, and the calls. */
function parse(format: string, tools: ToolDef[], text: string): { content: string; calls: Call[] } {
  const p = createToolCallParser(format, tools as ToolSchema[]);
  const events = [...p.push(text), ...p.finish()];
  let content = '';
  const calls: { name: string; args: string }[] = [];
  for (const e of events) {
    if (e.type === 'text') content += e.text;
    else if (e.type === 'tool_call_start') calls.push({ name: e.name, args: '' });
    else calls[e.index].args += e.fragment;
  }
  return { content, calls: calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.args) as Record<string, unknown> })) };
}

/** The JSON-schema rules the test tools use (`root` holds the $defs local $refs point into). */
function validate(v: unknown, s: Schema, root: Schema, path = '$'): void {
  if (typeof s.$ref === 'string') return validate(v, (root.$defs as Record<string, Schema>)[s.$ref.replace('#/$defs/', '')], root, path);
  if ('const' in s) return assert.equal(JSON.stringify(v), JSON.stringify(s.const), `${path}: ${JSON.stringify(v)} is not the const`);
  if (Array.isArray(s.allOf)) return s.allOf.forEach((x) => validate(v, x as Schema, root, path));
  if (Array.isArray(s.enum))
    return assert.ok(
      s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)),
      `${path}: ${JSON.stringify(v)} not in enum`,
    );
  if (Array.isArray(s.anyOf)) {
    const ok = s.anyOf.some((alt) => {
      try {
        validate(v, alt as Schema, root, path);
        return true;
      } catch {
        return false;
      }
    });
    return assert.ok(ok, `${path}: ${JSON.stringify(v)} matches no alternative`);
  }
  if (s.type === undefined) return; // any value
  const types = Array.isArray(s.type) ? s.type : [s.type];
  const typeOf = v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
  assert.ok(types.includes(typeOf) || (typeOf === 'integer' && types.includes('number')), `${path}: ${JSON.stringify(v)} is not ${types}`);
  if (typeOf === 'object') {
    const o = v as Record<string, unknown>;
    const props = (s.properties ?? null) as Record<string, Schema> | null;
    for (const k of (s.required ?? []) as string[]) assert.ok(k in o, `${path}: missing ${k}`);
    const extra = s.additionalProperties as Schema | undefined;
    for (const [k, x] of Object.entries(o)) {
      if (props) {
        assert.ok(k in props, `${path}: unexpected ${k}`);
        validate(x, props[k], root, `${path}.${k}`);
      } else if (extra) {
        validate(x, extra, root, `${path}.${k}`);
      }
    }
  }
  if (typeOf === 'array') {
    const a = v as unknown[];
    if (typeof s.maxItems === 'number') assert.ok(a.length <= s.maxItems, `${path}: too many items`);
    if (s.items) a.forEach((x, i) => validate(x, s.items as Schema, root, `${path}[${i}]`));
  }
}

/** Parses `text` with the real parser and checks it is only valid calls of `tools`. */
function checkCalls(format: string, tools: ToolDef[], text: string, maxCalls = 0): Call[] {
  const { content, calls } = parse(format, tools, text);
  assert.equal(content.trim(), '', `no text besides the calls in ${JSON.stringify(text)}`);
  assert.ok(calls.length >= 1, `at least one call in ${JSON.stringify(text)}`);
  if (maxCalls > 0) assert.ok(calls.length <= maxCalls, `at most ${maxCalls} calls`);
  for (const call of calls) {
    const tool = tools.find((t) => t.name === call.name);
    assert.ok(tool, `unknown tool ${call.name}`);
    try {
      validate(call.arguments, tool.parameters as Schema, tool.parameters as Schema);
    } catch (e) {
      assert.fail(`${(e as Error).message} in ${JSON.stringify(text)}`);
    }
  }
  return calls;
}

// ---------------------------------------------------------------------------------------------
// (1) valid calls are accepted token by token and parse back to the intended calls

const CALC_ARGS = { a: 1.5, b: -2, op: 'mul', precision: null };
const TRICKY = 'Oslo, "the" {city} é 中文';

const VALID: [Format, string, Call[]][] = [
  [
    'fam2',
    `[TOOL_CALLS]calculate[ARGS]{"a": 1.5, "b": -2, "op": "mul", "precision": null}[TOOL_CALLS]get_weather{"city": ${JSON.stringify(TRICKY)}}`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'fam2',
    `[TOOL_CALLS][{"name": "calculate", "arguments": {"a": 1.5, "b": -2, "op": "mul", "precision": null}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: 'Oslo' } },
    ],
  ],
  [
    'fam3',
    `<|tool_call>call:calculate{a:1.5,b:-2,op:<|"|>mul<|"|>,precision:null}<tool_call|><|tool_call>call:get_weather{city:<|"|>${TRICKY}<|"|>}<tool_call|>`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'fam3',
    `<|tool_call>call:search{query:"say \\"hi\\"",when:{day:3,hour:<|"|>noon<|"|>},tags:[<|"|>a<|"|>, "b"],filters:{"k":[1,{"x":<|"|>y<|"|>}]},exact:false}<tool_call|>`,
    [
      {
        name: 'search',
        arguments: { query: 'say "hi"', when: { day: 3, hour: 'noon' }, tags: ['a', 'b'], filters: { k: [1, { x: 'y' }] }, exact: false },
      },
    ],
  ],
  [
    'fam4_xml',
    '<minimax:tool_call>\n<invoke name="calculate">\n<parameter name="a">1.5</parameter>\n<parameter name="b">-2</parameter>\n<parameter name="op">mul</parameter>\n<parameter name="precision">null</parameter>\n</invoke>\n' +
      `<invoke name="get_weather">\n<parameter name="city">${TRICKY}\n(any <b>text</b>)</parameter>\n</invoke>\n</minimax:tool_call>`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: `${TRICKY}\n(any <b>text</b>)` } },
    ],
  ],
  [
    'fam4_xml',
    '<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">123</parameter>\n<parameter name="when">{"day": 2, "hour": "noon"}</parameter>\n<parameter name="tags">["x"]</parameter>\n<parameter name="exact">true</parameter>\n</invoke>\n</minimax:tool_call>',
    [{ name: 'search', arguments: { query: '123', when: { day: 2, hour: 'noon' }, tags: ['x'], exact: true } }],
  ],
  [
    'bare_json',
    `{"name": "calculate", "arguments": {"a": 1.5, "b": -2, "op": "mul", "precision": null}}\n{"name": "get_weather", "arguments": {"city": ${JSON.stringify(TRICKY)}}}`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'bare_json',
    '[{"name": "calculate", "arguments": {"a": 1.5, "b": -2, "op": "mul", "precision": null}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]',
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: 'Oslo' } },
    ],
  ],
  [
    'llama3_json',
    `{"name": "calculate", "parameters": {"a": 1.5, "b": -2, "op": "mul", "precision": null}}; {"name": "get_weather", "parameters": {"city": ${JSON.stringify(TRICKY)}}}`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'glm4',
    '<tool_call>calculate\n<arg_key>a</arg_key>\n<arg_value>1.5</arg_value>\n<arg_key>b</arg_key>\n<arg_value>-2</arg_value>\n<arg_key>op</arg_key>\n<arg_value>mul</arg_value>\n<arg_key>precision</arg_key>\n<arg_value>null</arg_value>\n</tool_call>\n' +
      `<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>${TRICKY}</arg_value>\n</tool_call>`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'pythonic',
    `[calculate(a=1.5, b=-2, op='mul', precision=None), get_weather(city="Oslo, \\"the\\" {city} \\u00e9 中文")]`,
    [
      { name: 'calculate', arguments: CALC_ARGS },
      { name: 'get_weather', arguments: { city: TRICKY } },
    ],
  ],
  [
    'pythonic',
    `[search(query='it\\'s\\n\\x41', when={'day': 3, 'hour': 'noon'}, tags=['a', "b"], filters={'k': [1, True, None]}, exact=False)]`,
    [
      {
        name: 'search',
        arguments: { query: "it's\nA", when: { day: 3, hour: 'noon' }, tags: ['a', 'b'], filters: { k: [1, true, null] }, exact: false },
      },
    ],
  ],
];

for (const [format, text, expected] of VALID) {
  test(`${format}: a valid output is allowed token by token, then only an end token, and parses back`, () => {
    const g = grammar(format, ALL);
    const st = feedText(g, g.start(), text);
    assert.ok(g.isComplete(st), 'complete after the calls');
    g.allowedTokens(st, mask);
    assert.equal(mask[IM_END], 1);
    assert.equal(mask[tk.encode('Hello')[0]], 0, 'no prose after the calls');
    assert.deepEqual(checkCalls(format, ALL, text), expected);
  });
}

test('every format has a grammar; an unknown format and an empty tool list have none', () => {
  for (const f of [...FORMATS, 'hermes', 'fam1_coder', 'fam1_xml'])
    assert.ok(compileToolGrammar({ format: f, tools: [WEATHER], endTokenIds: END_IDS }, vocab), f);
  assert.equal(compileToolGrammar({ format: 'nonesuch', tools: [WEATHER], endTokenIds: END_IDS }, vocab), null);
  assert.equal(compileToolGrammar({ format: 'pythonic', tools: [], endTokenIds: END_IDS }, vocab), null);
});

// ---------------------------------------------------------------------------------------------
// (2) invalid continuations are masked

// [format, prefix, next token's text, allowed?, what]
const CONTINUATIONS: [Format, string, string, boolean, string][] = [
  ['fam2', '', 'Hello', false, 'text before the call'],
  ['fam2', '[TOOL_CALLS]', 'search', true, 'an offered tool'],
  ['fam2', '[TOOL_CALLS]', 'lookup', false, 'a tool that is not offered'],
  ['fam2', '[TOOL_CALLS]get_weather[ARGS]{"city": ', '3', false, 'a number for a string'],
  ['fam2', '[TOOL_CALLS]get_weather[ARGS]{"city": "x"', '}', true, 'required city given'],
  ['fam2', '[TOOL_CALLS]get_weather[ARGS]{"days": 2', '}', false, 'required city missing'],
  ['fam3', '', 'Sure', false, 'text before the call'],
  ['fam3', '<|tool_call>call:', 'lookup', false, 'a tool that is not offered'],
  ['fam3', '<|tool_call>call:get_weather{city:', '3', false, 'a number for a string'],
  ['fam3', '<|tool_call>call:get_weather{days:', '<', false, 'a string for an integer'],
  ['fam3', '<|tool_call>call:get_weather{days:', '3', true, 'an integer'],
  ['fam3', '<|tool_call>call:get_weather{unit:<|"|>', 'kelvin', false, 'a value outside the enum'],
  ['fam3', '<|tool_call>call:get_weather{unit:<|"|>', 'celsius<|"|>', true, 'an enum value'],
  ['fam3', '<|tool_call>call:get_weather{city:<|"|>x<|"|>}', '<tool_call|>', true, 'the closing tag'],
  ['fam4_xml', '', '<invoke', false, 'an invoke without its block'],
  ['fam4_xml', '<minimax:tool_call>\n<invoke name="', 'lookup', false, 'a tool that is not offered'],
  ['fam4_xml', '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="days">', 'many', false, 'text for an integer'],
  ['fam4_xml', '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="days">', '12', true, 'an integer'],
  ['fam4_xml', '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="unit">', 'kelvin', false, 'a value outside the enum'],
  ['fam4_xml', '<minimax:tool_call>\n<invoke name="get_weather">\n', '</invoke>', false, 'required city missing'],
  [
    'fam4_xml',
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">a</parameter>\n',
    '<parameter name="city">',
    false,
    'a repeated parameter',
  ],
  ['bare_json', '', 'The', false, 'text before the call'],
  ['bare_json', '{"name": "', 'lookup', false, 'a tool that is not offered'],
  ['bare_json', '{"name": "calculate", "arguments": {"a": ', '"', false, 'a string for a number'],
  ['bare_json', '{"name": "calculate", "', 'parameters', false, 'llama3 key in bare_json'],
  ['llama3_json', '{"name": "calculate", "', 'arguments', false, 'bare_json key in llama3_json'],
  ['llama3_json', '{"name": "calculate", "', 'parameters', true, 'its own key'],
  ['llama3_json', '{"name": "get_weather", "parameters": {"city": "x"}}', ';', true, 'the call separator'],
  ['llama3_json', '', '<|python_tag|>', false, 'the plain form only'],
  ['glm4', '<tool_call>', 'lookup', false, 'a tool that is not offered'],
  ['glm4', '<tool_call>get_weather\n<arg_key>', 'country', false, 'an unknown parameter'],
  ['glm4', '<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>', 'x', false, 'text for an integer'],
  ['glm4', '<tool_call>calculate\n<arg_key>precision</arg_key>\n<arg_value>', 'null', true, 'null for a nullable integer'],
  ['glm4', '<tool_call>calculate\n<arg_key>a</arg_key>\n<arg_value>', 'null', false, 'null for a number'],
  ['pythonic', '', 'Sure', false, 'text before the call list'],
  ['pythonic', '[', 'lookup', false, 'a tool that is not offered'],
  ['pythonic', '[get_weather(city=', '3', false, 'a number for a string'],
  ['pythonic', '[get_weather(city=', "'", true, 'a Python string'],
  ['pythonic', '[calculate(a=1, b=2, op=', "'pow'", false, 'a value outside the enum'],
  ['pythonic', '[calculate(a=1, b=2, op=', "'div'", true, 'an enum value'],
  ['pythonic', '[calculate(a=1e', '999', false, 'a number past the float range'],
  ['pythonic', '[calculate(a=1, b=2, op="add", precision=', 'null', false, "JSON's null"],
  ['pythonic', '[calculate(a=1, b=2, op="add", precision=', 'None', true, "Python's None"],
  ['pythonic', '[search(query="q", exact=', 'true', false, "JSON's true"],
  ['pythonic', '[get_weather(days=1', ')', false, 'required city missing'],
  ['pythonic', '[get_weather(city="x"', ')]', true, 'the end of the list'],
];

for (const format of FORMATS) {
  test(`${format}: invalid continuations are masked; the turn cannot end before or inside a call`, () => {
    const g = grammar(format, ALL);
    for (const [f, prefix, next, allowed, what] of CONTINUATIONS) {
      if (f !== format) continue;
      assert.equal(continuationAllowed(g, prefix, next), allowed, `${what}: ${JSON.stringify(prefix)} + ${JSON.stringify(next)}`);
    }
    g.allowedTokens(g.start(), mask);
    assert.equal(mask[IM_END], 0, 'no end before a call');
    const [, text] = VALID.find(([f]) => f === format)!;
    const ids = tk.encode(text);
    let st = g.start();
    for (const id of ids.slice(0, ids.length >> 1)) st = g.advance(st, id);
    g.allowedTokens(st, mask);
    assert.equal(mask[IM_END], 0, 'no end inside a call');
  });
}

test('maxCalls: a forced single call leaves no second call open, in every format', () => {
  const second: Record<(typeof FORMATS)[number], [string, string]> = {
    fam2: ['[TOOL_CALLS]get_weather{"city": "x"}', '[TOOL_CALLS]'],
    fam3: ['<|tool_call>call:get_weather{city:<|"|>x<|"|>}<tool_call|>', '<|tool_call>'],
    fam4_xml: ['<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">x</parameter>\n</invoke>\n', '<invoke'],
    bare_json: ['{"name": "get_weather", "arguments": {"city": "x"}}\n', '{"'],
    llama3_json: ['{"name": "get_weather", "parameters": {"city": "x"}}', ';'],
    glm4: ['<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>x</arg_value>\n</tool_call>\n', '<tool_call>'],
    pythonic: ['[get_weather(city="x")', ','],
  };
  for (const format of FORMATS) {
    const [one, more] = second[format];
    assert.equal(continuationAllowed(grammar(format, ALL), one, more), true, `${format}: a second call with no limit`);
    assert.equal(continuationAllowed(grammar(format, ALL, { maxCalls: 1 }), one, more), false, `${format}: no second call with maxCalls 1`);
  }
  // The array forms count their items.
  const g = grammar('bare_json', ALL, { maxCalls: 2 });
  const two = '[{"name": "get_weather", "arguments": {"city": "x"}}, {"name": "get_weather", "arguments": {"city": "y"}}';
  assert.equal(continuationAllowed(g, two, ','), false, 'a third item');
  assert.equal(continuationAllowed(g, two, ']'), true);
});

// ---------------------------------------------------------------------------------------------
// (3) random walks through the masks give only valid calls, read by the real parsers

/** Tokens with punctuation of some format: picking them half the time makes walks finish. */
const structural = (() => {
  const s = new Uint8Array(vocab.size);
  for (let id = 0; id < vocab.size; id++) if (/["'{}[\](),:;=<>|/0-9]/.test(tk.decode([id]))) s[id] = 1;
  return s;
})();

/** Picks allowed tokens at random, half the time a structural one; now and then writes `closer` (a closing tag) whole. */
function randomWalk(g: ToolGrammar, rng: Rng, maxTokens: number, closer: readonly number[]): { text: string; complete: boolean } {
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
    assert.ok(all.length > 0, `dead end after ${JSON.stringify(tk.decode(ids))}`);
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

const CLOSERS: Record<(typeof FORMATS)[number], string> = {
  fam2: '"}',
  fam3: '<|"|>',
  fam4_xml: '</parameter>',
  bare_json: '"}',
  llama3_json: '"}',
  glm4: '</arg_value>',
  pythonic: "')",
};

FORMATS.forEach((format, fi) => {
  test(`${format}: random walks give only valid calls, as its parser reads them`, () => {
    const rng = new Rng(1000 + fi * 7919);
    const closer = tk.encode(CLOSERS[format]);
    const walks = 6;
    let complete = 0;
    for (let w = 0; w < walks; w++) {
      // Alternate the tool sets and limits: one tool, all of them, a forced single call.
      const tools = w % 3 === 0 ? [WEATHER] : ALL;
      const maxCalls = w % 3 === 2 ? 1 : 0;
      const g = grammar(format, tools, { maxCalls });
      const { text, complete: done } = randomWalk(g, rng, 400, closer);
      if (!done) continue;
      complete++;
      checkCalls(format, tools, text, maxCalls);
    }
    assert.ok(complete >= walks / 2, `only ${complete} of ${walks} walks finished`);
  });
});

// ---------------------------------------------------------------------------------------------
// Values that are not JSON, on a vocabulary of single bytes (every text is spelled byte by byte)

const byteVocab = new VocabIndex(Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)));
const BYTE_END = 256;

/** Whether `text` is accepted, complete, by the grammar of `format` for `tools`. */
function accepts(format: Format, tools: ToolDef[], text: string, maxCalls = 0): boolean {
  const g = compileToolGrammar({ format, tools, endTokenIds: [BYTE_END], maxCalls }, byteVocab);
  assert.ok(g, `${format} compiles`);
  let st: GrammarState | null = g.start();
  for (const b of new TextEncoder().encode(text)) {
    st = g.tryAdvance(st, b);
    if (st === null) return false;
  }
  return g.tryAdvance(st, BYTE_END) !== null;
}

const f = (properties: Schema, required: string[] = []): ToolDef[] => [{ name: 'f', parameters: { type: 'object', properties, required } }];

test('pythonic: Python strings, literals and keyword arguments', () => {
  const tools = f({
    s: { type: 'string' },
    n: { type: ['integer', 'null'] },
    d: { type: 'object', additionalProperties: { type: 'boolean' } },
    l: { type: 'array', items: { type: 'number' } },
  });
  const good = [
    "[f(s='a\\'b\\\\c\\x41\\u00e9\\n\"')]",
    '[f(s="it\'s")]',
    '[f(n=None)]',
    '[f(n=-12)]',
    '[f(d={\'x\': True, "y": False})]',
    '[f(l=[1, -2.5e3])]',
    '[f()]',
    '[ f(s="a") , f() ]',
  ];
  const bad = [
    "[f(s='a\\qb')]",
    "[f(s='raw\nnewline')]",
    "[f(s='\\x4')]",
    '[f(n=1.5)]',
    '[f(n=null)]',
    "[f(d={'x': 1})]",
    '[f(x=1)]',
    '[f(s="a", s="b")]',
    '[f(s="a",)]',
    '[]',
    '[f(1)]',
  ];
  for (const t of good) assert.ok(accepts('pythonic', tools, t), `${t} should be accepted`);
  for (const t of bad) assert.ok(!accepts('pythonic', tools, t), `${t} should be rejected`);
  for (const t of good) checkCalls('pythonic', tools, t);
  // Keyword names that are not identifiers: left out when optional; a required one leaves no grammar.
  const odd = f({ 'odd-key': { type: 'string' }, ok: { type: 'string' } });
  assert.ok(accepts('pythonic', odd, '[f(ok="x")]'));
  assert.equal(
    compileToolGrammar(
      { format: 'pythonic', tools: f({ 'odd-key': { type: 'string' } }, ['odd-key']), endTokenIds: [BYTE_END] },
      byteVocab,
    ),
    null,
  );
  // No listed properties: any keyword arguments.
  assert.ok(accepts('pythonic', [{ name: 'g' }], "[g(any_name=[1, 'x'], _b={'k': None})]"));
  assert.ok(!accepts('pythonic', [{ name: 'g' }], '[g(1x=2)]'));
  // Enum values in Python spelling.
  const e = f({ v: { enum: ['a', 1, true, null, { k: 'v' }] } });
  for (const v of ["'a'", '1', 'True', 'None', "{'k': 'v'}"]) {
    assert.ok(accepts('pythonic', e, `[f(v=${v})]`), v);
    checkCalls('pythonic', e, `[f(v=${v})]`);
  }
  assert.ok(!accepts('pythonic', e, '[f(v="b")]'));
});

test('fam3: Gemma strings, bare and quoted keys, words', () => {
  const Q = '<|"|>';
  const tools = f(
    { s: { type: 'string' }, 'odd key:': { type: 'integer' }, n: { type: 'number' }, b: { type: 'boolean' }, o: { type: 'object' } },
    ['s'],
  );
  const good = [
    `{s:${Q}any "text" {}, <tool_call|>${Q}}`,
    '{s:"json \\"quoted\\""}',
    `{s:${Q}${Q},"odd key:":3,n:-1.5e2,b:true,o:{"k":[1,${Q}x${Q},null]}}`,
  ];
  const bad = ['{s:bare}', `{s:${Q}x${Q},odd key::3}`, `{s:${Q}x${Q},n:"1"}`, `{s:${Q}x${Q},b:True}`, `{n:1}`];
  for (const body of good) {
    const text = `<|tool_call>call:f${body}<tool_call|>`;
    assert.ok(accepts('fam3', tools, text), `${body} should be accepted`);
    checkCalls('fam3', tools, text);
  }
  for (const body of bad) assert.ok(!accepts('fam3', tools, `<|tool_call>call:f${body}<tool_call|>`), `${body} should be rejected`);
  // Names the parser cannot read leave no grammar.
  assert.equal(compileToolGrammar({ format: 'fam3', tools: [{ name: 'a b' }], endTokenIds: [BYTE_END] }, byteVocab), null);
});

test('XML formats: text is typed as the parser types it', () => {
  const tools = f({
    s: { type: 'string' },
    si: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
    e: { type: 'string', enum: ['a b', 'null', '5'] },
    ie: { type: 'integer', enum: [1, 20] },
    c: { allOf: [{ const: 'x' }] },
    r: { $ref: '#/$defs/obj' },
    any: {},
    o: { type: 'object' },
  });
  (tools[0].parameters as Schema).$defs = { obj: { type: 'object', properties: { k: { type: 'integer' } } } };
  const param = (format: Format, k: string, v: string) =>
    format === 'fam4_xml'
      ? `<minimax:tool_call><invoke name="f"><parameter name="${k}">${v}</parameter></invoke></minimax:tool_call>`
      : format === 'glm4'
        ? `<tool_call>f\n<arg_key>${k}</arg_key><arg_value>${v}</arg_value></tool_call>`
        : `<tool_call><function=f><parameter=${k}>\n${v}\n</parameter></function></tool_call>`;
  for (const format of ['fam4_xml', 'glm4', 'fam1_coder'] as const) {
    const cases: [string, string, boolean][] = [
      ['s', 'free <b>text</b>, 5, null', true],
      ['s', 'a </invoke> b', format !== 'fam4_xml'],
      ['si', 'text or 12', true],
      ['e', 'a b', true],
      ['e', 'null', true],
      ['e', '5', true],
      ['e', 'c', false],
      ['ie', '20', true],
      ['ie', '2', false],
      // An untyped parameter: text stays text in fam1/fam4, JSON is JSON in glm4.
      ['c', 'x', format !== 'glm4'],
      ['c', '"x"', format === 'glm4'],
      ['r', '{"k": 1}', format === 'glm4'],
      ['any', 'anything [at] all', true],
      // JSON inside a tag: its strings cannot hold a tag the parser would end the value at.
      ['r', format === 'fam1_coder' ? '' : `{"k": 1, "s": "a${format === 'glm4' ? '</arg_value>' : '</parameter>'}b"}`, false],
      ['o', '{"s": "a<b"}', true],
      ['o', `{"s": "${format === 'glm4' ? '<arg_key>' : format === 'fam4_xml' ? '</invoke>' : '</function>'}"}`, false],
      ['o', '{"s": "\\u003c/parameter>"}', true],
    ];
    for (const [k, v, ok] of cases) {
      const text = param(format, k, v);
      assert.equal(accepts(format, tools, text), ok, `${format}: ${k} = ${JSON.stringify(v)}`);
      if (ok) checkCalls(format, tools, text);
    }
  }
  // A required parameter no text can satisfy (an object behind a $ref, read as a string): no grammar.
  const req = f({ r: { $ref: '#/$defs/obj' } }, ['r']);
  (req[0].parameters as Schema).$defs = { obj: { type: 'object' } };
  assert.equal(compileToolGrammar({ format: 'fam4_xml', tools: req, endTokenIds: [BYTE_END] }, byteVocab), null);
  assert.ok(compileToolGrammar({ format: 'glm4', tools: req, endTokenIds: [BYTE_END] }, byteVocab), 'glm4 reads it as JSON');
});

test('arguments are always an object; listed properties (even none) close it', () => {
  const anything = [{ name: 'f', parameters: {} }];
  const none = [{ name: 'f', parameters: { type: 'object', properties: {} } }];
  const wrap: [Format, (args: string) => string][] = [
    ['hermes', (a) => `<tool_call>{"name": "f", "arguments": ${a}}</tool_call>`],
    ['bare_json', (a) => `{"name": "f", "arguments": ${a}}`],
    ['llama3_json', (a) => `{"name": "f", "parameters": ${a}}`],
    ['fam2', (a) => `[TOOL_CALLS][{"name": "f", "arguments": ${a}}]`],
  ];
  for (const [format, call] of wrap) {
    assert.ok(!accepts(format, anything, call('5')), `${format}: arguments 5`);
    assert.ok(accepts(format, anything, call('{"x": [1]}')), `${format}: any object`);
    assert.ok(accepts(format, none, call('{}')), `${format}: {}`);
    assert.ok(!accepts(format, none, call('{"x": 1}')), `${format}: no keys`);
    checkCalls(format, none, call('{}'));
  }
  assert.ok(accepts('fam2', none, '[TOOL_CALLS]f[ARGS]{}'));
  assert.ok(accepts('pythonic', none, '[f()]') && !accepts('pythonic', none, '[f(x=1)]'));
  assert.ok(accepts('fam3', none, '<|tool_call>call:f{}<tool_call|>') && !accepts('fam3', none, '<|tool_call>call:f{x:1}<tool_call|>'));
  assert.ok(accepts('glm4', none, '<tool_call>f\n</tool_call>'));
});

test('reasoning first, then a pythonic call list', () => {
  const g = grammar('pythonic', [WEATHER], { afterReasoningEnd: '</think>' });
  let st = feedText(g, g.start(), 'Maybe [get_weather(city="x")] or not.</think>\n\n');
  assert.equal(continuationAllowed(g, 'x</think>\n\n', 'Sure'), false, 'prose after the reasoning');
  st = feedText(g, st, '[get_weather(city="Rome")]');
  assert.ok(g.isComplete(st));
});

test('maxCalls 2: two calls pass, a third does not, in every format and form', () => {
  const tools = [{ name: 'f', parameters: { type: 'object', properties: {} } }];
  const forms: [Format, (n: number) => string][] = [
    ['fam2', (n) => '[TOOL_CALLS]f{}'.repeat(n)],
    ['fam2', (n) => `[TOOL_CALLS][${Array(n).fill('{"name": "f", "arguments": {}}').join(', ')}]`],
    ['fam3', (n) => '<|tool_call>call:f{}<tool_call|>'.repeat(n)],
    ['fam4_xml', (n) => `<minimax:tool_call>${'<invoke name="f"></invoke>'.repeat(n)}</minimax:tool_call>`],
    ['bare_json', (n) => '{"name": "f", "arguments": {}}'.repeat(n)],
    ['bare_json', (n) => `[${Array(n).fill('{"name": "f", "arguments": {}}').join(',')}]`],
    ['llama3_json', (n) => Array(n).fill('{"name": "f", "parameters": {}}').join('; ')],
    ['glm4', (n) => '<tool_call>f\n</tool_call>'.repeat(n)],
    ['pythonic', (n) => `[${Array(n).fill('f()').join(', ')}]`],
  ];
  for (const [format, text] of forms) {
    assert.ok(accepts(format, tools, text(2), 2), `${format}: ${text(2)}`);
    assert.equal(checkCalls(format, tools, text(2)).length, 2, `${format}: two calls parsed`);
    assert.ok(!accepts(format, tools, text(3), 2), `${format}: ${text(3)}`);
    assert.ok(accepts(format, tools, text(3), 0), `${format}: no limit`);
  }
});

test('tool names each format cannot write leave no grammar', () => {
  const cases: [Format, string][] = [
    ['fam2', 'a b'],
    ['fam3', 'a{b'],
    ['fam4_xml', 'a>b'],
    ['glm4', 'a b'],
    ['pythonic', '1abc'],
    ['fam1_coder', ' padded'],
    ['bare_json', ''],
  ];
  for (const [format, name] of cases) {
    assert.equal(
      compileToolGrammar({ format, tools: [{ name }], endTokenIds: [BYTE_END] }, byteVocab),
      null,
      `${format}: ${JSON.stringify(name)}`,
    );
  }
});

// ---------------------------------------------------------------------------------------------
// The cached masks are exactly the tokens the matcher accepts (new node kinds: Python strings,
// objects entered after their bracket, Gemma strings and keys, JSON strings guarded against tags)

test('masks equal a brute-force check of every token (non-JSON formats)', () => {
  const cases: [ToolGrammar, string][] = [
    [grammar('pythonic', ALL), `[search(query='a\\'b "c" \\x41', when={'day': 3}, tags=["x"]), get_weather(city='Oslo')]`],
    [grammar('fam3', ALL), '<|tool_call>call:search{query:<|"|>a}<|"|,b<|"|>,exact:true,filters:{"k":1}}<tool_call|>'],
    [
      grammar('glm4', ALL),
      '<tool_call>search\n<arg_key>filters</arg_key><arg_value>{"a": "x </arg_val y <arg", "b": [1]}</arg_value><arg_key>query</arg_key><arg_value>q</arg_value></tool_call>',
    ],
  ];
  const states = checkMasksAgainstBruteForce(cases, tk, vocab, 3);
  assert.ok(states > 15);
});

// ---------------------------------------------------------------------------------------------
// How long a mask takes in a format with non-JSON values (printed, not asserted: the machine is shared)

test('mask time per token, pythonic, fam3 and glm4 on the 152k vocabulary', () => {
  const fresh = new VocabIndex(tokenByteStrings(tk));
  const lines: string[] = [];
  const points: [Format, string, string][] = [
    ['pythonic', 'before the list', ''],
    ['pythonic', 'tool name', '['],
    ['pythonic', 'keyword', '[search('],
    ['pythonic', "inside a 'string'", "[search(query='Weekly"],
    ['pythonic', 'inside a number', '[calculate(a=12'],
    ['pythonic', 'after a value', "[search(query='q',"],
    ['fam3', 'inside <|"|>string', '<|tool_call>call:search{query:<|"|>Weekly'],
    ['fam3', 'bare key', '<|tool_call>call:search{query:<|"|>q<|"|>,'],
    ['glm4', 'inside a text value', '<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>Weekly'],
  ];
  const grammars = new Map<string, ToolGrammar>();
  for (const [format, label, text] of points) {
    let g = grammars.get(format);
    if (!g) grammars.set(format, (g = compileToolGrammar({ format, tools: ALL, endTokenIds: END_IDS }, fresh)!));
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
      `  ${format.padEnd(9)} ${label.padEnd(20)} first ${cold.toFixed(2).padStart(7)} ms, then ${warm.toFixed(3).padStart(6)} ms  (${allowed} tokens allowed)`,
    );
    assert.ok(allowed > 0);
  }
  console.log(`mask time, ${vocab.size} tokens (first = cache miss, then cached):\n${lines.join('\n')}`);
});

test('numeric bounds hold in every syntax; patterns and lengths in JSON arguments only', () => {
  const tools = f({ n: { type: 'integer', minimum: 1, maximum: 5 }, s: { type: 'string', maxLength: 2, pattern: '^a' } });
  const cases: [Format, (k: string, v: string) => string, string, string][] = [
    ['hermes', (k, v) => `<tool_call>{"name": "f", "arguments": {"${k}": ${v}}}</tool_call>`, '"ab"', '"abc"'],
    ['pythonic', (k, v) => `[f(${k}=${v})]`, "'ab'", "'zzz'"],
    ['fam3', (k, v) => `<|tool_call>call:f{${k}:${v}}<tool_call|>`, '<|"|>ab<|"|>', '<|"|>zzz<|"|>'],
    ['glm4', (k, v) => `<tool_call>f\n<arg_key>${k}</arg_key><arg_value>${v}</arg_value></tool_call>`, 'ab', 'zzz'],
  ];
  for (const [format, call, goodString, otherString] of cases) {
    assert.ok(accepts(format, tools, call('n', '5')), `${format}: n = 5`);
    assert.ok(!accepts(format, tools, call('n', '6')), `${format}: n = 6`);
    assert.ok(!accepts(format, tools, call('n', '0')), `${format}: n = 0`);
    assert.ok(accepts(format, tools, call('s', goodString)), `${format}: s = ${goodString}`);
    // Strings other syntaxes spell are free (not enforced there); JSON enforces pattern and maxLength.
    assert.equal(accepts(format, tools, call('s', otherString)), format !== 'hermes', `${format}: s = ${otherString}`);
  }
});
