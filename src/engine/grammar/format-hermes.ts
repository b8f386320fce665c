// hermes (Qwen2.5, Qwen3, Hermes): `<tool_call>\n{"name": "NAME", "arguments": {…}}\n</tool_call>`.
// The name is one of the allowed tools and picks the schema the arguments must match.

import { parametersNode } from './json-schema-grammar.js';
import { JSON_GAP, lit, literalSwitch, seq, TAG_GAP, type GNode } from './nodes.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';

export const hermes: ToolCallFormat = {
  opener: '<tool_call>',
  call(tools: readonly ToolDef[]): GNode {
    const argsOf = (t: ToolDef) =>
      seq([JSON_GAP, lit(','), JSON_GAP, lit('"arguments"'), JSON_GAP, lit(':'), JSON_GAP, parametersNode(t.parameters), JSON_GAP, lit('}')]);
    return seq([
      lit('<tool_call>'),
      TAG_GAP,
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
      TAG_GAP,
      lit('</tool_call>'),
    ]);
  },
};
