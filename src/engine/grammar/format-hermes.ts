// hermes (Qwen2.5, Qwen3, Hermes): `<tool_call>\n{"name": "NAME", "arguments": {…}}\n</tool_call>`.
// The name is one of the allowed tools and picks the schema the arguments must match.
// The call object itself is shared with the other JSON formats (bare_json, llama3_json, fam2).

import { parametersNode } from './json-schema-grammar.js';
import { JSON_GAP, lit, literalSwitch, seq, TAG_GAP, type GNode } from './nodes.js';
import { check } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';

/**
 * `{"name": "NAME", "<argsKey>": {…}}`: the name first (so the parsers commit the call as soon as
 * its arguments begin), then the arguments, an object valid for that tool's schema.
 */
export function jsonCallObject(tools: readonly ToolDef[], argsKey: 'arguments' | 'parameters'): GNode {
  // The parsers take a call only with a non-empty name.
  for (const t of tools) check(t.name.length > 0, 'an empty tool name');
  const argsOf = (t: ToolDef) =>
    seq([
      JSON_GAP,
      lit(','),
      JSON_GAP,
      lit(JSON.stringify(argsKey)),
      JSON_GAP,
      lit(':'),
      JSON_GAP,
      parametersNode(t.parameters),
      JSON_GAP,
      lit('}'),
    ]);
  return seq([
    lit('{'),
    JSON_GAP,
    lit('"name"'),
    JSON_GAP,
    lit(':'),
    JSON_GAP,
    // Quoted names end in `"`, so no name is a prefix of another.
    literalSwitch(
      tools.map((t) => JSON.stringify(t.name)),
      tools.map(argsOf),
    ),
  ]);
}

export const hermes: ToolCallFormat = {
  opener: '<tool_call>',
  call(tools: readonly ToolDef[]): GNode {
    return seq([lit('<tool_call>'), TAG_GAP, jsonCallObject(tools, 'arguments'), TAG_GAP, lit('</tool_call>')]);
  },
};
