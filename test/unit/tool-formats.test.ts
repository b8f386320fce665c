// The tool-call format registry: every format has both halves (a parser and a grammar), every name
// the CLI and MODEL.toml accepted before the registry still selects one, and no name is taken twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ParserEvent } from '../../src/chat/events.js';
import { ArgsWriter } from '../../src/chat/tool-formats/common/args-writer.js';
import { pythonLiteral } from '../../src/chat/tool-formats/common/param-typer.js';
import { CallSink } from '../../src/chat/tool-formats/common/stream.js';
import { toolGrammarConstraint } from '../../src/chat/tool-formats/constraint.js';
import { isToolCallParserName, TOOL_CALL_PARSER_NAMES, TOOL_FORMATS, toolFormat } from '../../src/chat/tool-formats/registry.js';
import { compileGrammar, VocabIndex } from '../../src/engine/grammar/index.js';

/** The `--tool-call-parser` values of the seed, in its order, then the ones added since. */
const SEED_NAMES = [
  'hermes',
  'fam1_coder',
  'fam1_xml',
  'fam2',
  'fam3',
  'fam4_xml',
  'bare_json',
  'llama3_json',
  'glm4',
  'pythonic',
  'harmony',
  'openai',
];

const byteVocab = new VocabIndex(Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)));
const TOOL = { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

test('every registered format has a parser and a grammar', () => {
  for (const format of TOOL_FORMATS) {
    const label = format.names.join('/');
    assert.ok(format.family.length > 0, `${label}: family`);
    const parser = format.parser([TOOL]);
    assert.equal(typeof parser.push, 'function', `${label}: parser`);
    assert.deepEqual(parser.push('plain text'), [{ type: 'text', text: 'plain text' }], `${label}: parser reads text`);
    assert.ok(format.grammar.call ?? format.grammar.calls, `${label}: grammar`);
    for (const name of format.names) {
      const constraint = toolGrammarConstraint({ format: name, tools: [TOOL], endTokenIds: [256] });
      assert.ok(constraint, `${name}: a grammar for one plain tool`);
      assert.ok(compileGrammar(structuredClone(constraint), byteVocab), `${name}: the grammar compiles`);
    }
  }
});

test('every tool-call parser name of the seed resolves, in the same order', () => {
  assert.deepEqual([...TOOL_CALL_PARSER_NAMES], SEED_NAMES);
  for (const name of SEED_NAMES) {
    assert.ok(isToolCallParserName(name), name);
    assert.ok(toolFormat(name)?.names.includes(name), name);
  }
  assert.equal(isToolCallParserName('nonesuch'), false);
  assert.equal(toolFormat('nonesuch'), undefined);
});

test('names are unique across formats', () => {
  const names = TOOL_FORMATS.flatMap((f) => [...f.names]);
  assert.equal(new Set(names).size, names.length);
});

test('ArgsWriter writes a key once: the first value is kept', () => {
  const out: ParserEvent[] = [];
  const sink = new CallSink();
  sink.target(out);
  const w = new ArgsWriter(sink, 'write_file');
  w.param('path', 'real.txt');
  assert.equal(w.has('path'), true);
  assert.equal(w.has('content'), false);
  w.param('content', 'x');
  w.param('path', 'literal/value.txt');
  w.close();
  const args = out.flatMap((e) => (e.type === 'tool_call_args' ? [e.fragment] : [])).join('');
  assert.equal(args, '{"path": "real.txt", "content": "x"}');
});

test('pythonLiteral reads exactly one Python literal', () => {
  assert.deepEqual(pythonLiteral("{'a': [1, 2.5], 'b': (True, None), \"c\": 'x'}"), { a: [1, 2.5], b: [true, null], c: 'x' });
  assert.deepEqual(pythonLiteral(" ['v', 'v_'] "), ['v', 'v_']);
  assert.equal(pythonLiteral('None'), null);
  for (const bad of ['', "{'a': 1},", "['a'], v=['b']", '[1], v_=[2]', '{a: 1}', "{'a': 1} x"])
    assert.equal(pythonLiteral(bad), undefined, bad);
});
