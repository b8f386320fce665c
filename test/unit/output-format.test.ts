// The structured-output fields of OpenAI-family requests → one OutputFormat, and an OutputFormat →
// the grammar the engine enforces (reasoning first, tool calls as the alternative in auto mode).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeOutputFormat } from '../../src/protocols/openai/structured.js';
import { outputFormatConstraint } from '../../src/chat/output-format.js';
import { toolCallsIR } from '../../src/chat/tool-formats/constraint.js';
import { compileIR } from '../../src/engine/grammar/index.js';
import { feed } from '../../src/engine/grammar/matcher.js';
import { ACCEPTED, enter, EOS, type Frame } from '../../src/engine/grammar/nodes.js';
import { ApiError } from '../../src/common/api-error.js';

const SCHEMA = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'], additionalProperties: false };

test('each request field gives its OutputFormat, with the field name for errors', () => {
  assert.equal(decodeOutputFormat({}), null);
  assert.equal(decodeOutputFormat({ response_format: { type: 'text' } }), null);
  assert.deepEqual(decodeOutputFormat({ response_format: { type: 'json_object' } }), { type: 'json_object', param: 'response_format' });
  assert.deepEqual(
    decodeOutputFormat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: SCHEMA, strict: true } } }),
    {
      type: 'json_schema',
      schema: SCHEMA,
      name: 'x',
      strict: true,
      param: 'response_format.json_schema.schema',
    },
  );
  // vLLM takes a schema as a JSON string too.
  assert.deepEqual(decodeOutputFormat({ guided_json: JSON.stringify(SCHEMA) }), {
    type: 'json_schema',
    schema: SCHEMA,
    param: 'guided_json',
  });
  assert.deepEqual(decodeOutputFormat({ guided_regex: 'a+' }), { type: 'regex', pattern: 'a+', param: 'guided_regex' });
  assert.deepEqual(decodeOutputFormat({ guided_choice: ['x', 'y'] }), { type: 'choice', choices: ['x', 'y'], param: 'guided_choice' });
  assert.deepEqual(decodeOutputFormat({ guided_grammar: 'root ::= "a"' }), {
    type: 'grammar',
    grammar: 'root ::= "a"',
    param: 'guided_grammar',
  });
  assert.deepEqual(decodeOutputFormat({ structured_outputs: { choice: ['x'] } }), {
    type: 'choice',
    choices: ['x'],
    param: 'structured_outputs.choice',
  });
  assert.deepEqual(decodeOutputFormat({ structured_outputs: { json_object: true } }), {
    type: 'json_object',
    param: 'structured_outputs.json_object',
  });
});

test('conflicting or malformed structured-output fields are 400s naming the field', () => {
  const paramOf = (body: Parameters<typeof decodeOutputFormat>[0]): string | null | undefined => {
    try {
      decodeOutputFormat(body);
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      return err.param;
    }
    assert.fail('expected a 400');
  };
  assert.equal(paramOf({ response_format: { type: 'json_object' }, guided_regex: 'a' }), 'guided_regex');
  assert.equal(paramOf({ structured_outputs: { regex: 'a', choice: ['b'] } }), 'structured_outputs');
  assert.equal(paramOf({ structured_outputs: { structural_tag: '{}' } }), 'structured_outputs.structural_tag');
  assert.equal(paramOf({ guided_json: '{not json' }), 'guided_json');
  assert.equal(paramOf({ guided_json: [1, 2] }), 'guided_json');
  assert.equal(paramOf({ response_format: { type: 'json_schema' } }), 'response_format.json_schema');
  assert.equal(paramOf({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }), 'response_format.json_schema.schema');
});

/** Feeds text through the compiled constraint; returns the state, or null where a byte is refused. */
function run(root: Parameters<typeof compileIR>[0], text: string): Frame | null {
  let st: Frame | null = enter(compileIR(root), null);
  for (const b of new TextEncoder().encode(text)) {
    st = feed(st, b);
    if (st === null) return null;
  }
  return st;
}
const ends = (st: Frame | null) => st !== null && feed(st, EOS) === ACCEPTED;

test('an OutputFormat constraint: free reasoning up to the close tag, then the answer, then the end', () => {
  const format = { type: 'json_schema' as const, schema: SCHEMA, param: 'response_format' };
  const c = outputFormatConstraint({ format, endTokenIds: [7], afterReasoningEnd: '</think>' });
  assert.deepEqual(c.endTokenIds, [7]);
  assert.ok(ends(run(c.root, 'anything {"a": 1} goes</think>\n\n{"a": 12}')));
  assert.equal(ends(run(c.root, 'thinking</think>{"a": "x"}')), false);
  assert.equal(run(c.root, '</think>hello'), null);
  const noReasoning = outputFormatConstraint({ format, endTokenIds: [7], afterReasoningEnd: null });
  assert.ok(ends(run(noReasoning.root, ' {"a": 3} ')));
  assert.equal(run(noReasoning.root, 'x'), null);
});

test('with tools in auto mode the answer may be a tool call instead, told apart by its first byte', () => {
  const calls = toolCallsIR(
    'hermes',
    [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    0,
  );
  const format = { type: 'json_object' as const, param: 'response_format' };
  const c = outputFormatConstraint({ format, endTokenIds: [7], afterReasoningEnd: null, calls });
  assert.ok(ends(run(c.root, '{"x": [1, 2]}')));
  assert.ok(ends(run(c.root, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')));
  assert.equal(run(c.root, 'plain text'), null);
});

test('a choice answer is exactly one of the choices; an empty list is a 400', () => {
  const c = outputFormatConstraint({
    format: { type: 'choice', choices: ['yes', 'yesterday', 'no'], param: 'guided_choice' },
    endTokenIds: [7],
    afterReasoningEnd: null,
  });
  assert.ok(ends(run(c.root, 'yes')));
  assert.ok(ends(run(c.root, 'yesterday')));
  assert.equal(ends(run(c.root, 'yest')), false);
  assert.equal(run(c.root, 'maybe'), null);
  assert.throws(
    () =>
      outputFormatConstraint({
        format: { type: 'choice', choices: [], param: 'guided_choice' },
        endTokenIds: [7],
        afterReasoningEnd: null,
      }),
    ApiError,
  );
});
