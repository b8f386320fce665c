// hermes (Qwen2.5, Qwen3, Hermes): `<tool_call>\n{"name": "NAME", "arguments": {…}}\n</tool_call>`.
// The name is one of the allowed tools and picks the schema the arguments must match.
// The call object itself is shared with the other JSON formats (common/json-call-grammar.ts).

import { lit, seq, TAG_GAP, type GrammarIR } from '../../../engine/grammar/ir.js';
import { jsonCallObject } from '../common/json-call-grammar.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

export const hermesGrammar: ToolCallGrammar = {
  opener: '<tool_call>',
  call(tools: readonly ToolDef[]): GrammarIR {
    return seq([lit('<tool_call>'), TAG_GAP, jsonCallObject(tools, 'arguments'), TAG_GAP, lit('</tool_call>')]);
  },
};
