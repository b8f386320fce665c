// llama3_json (Llama 3.x): `{"name": "NAME", "parameters": {…}}`, several separated by `; `.
// The plain form (the parser also takes a leading `<|python_tag|>`). What the parser reads back:
// parser.ts.

import { bounded, choice, END, lit, seq, TAG_GAP, type GrammarIR } from '../../../engine/grammar/ir.js';
import { jsonCallObject } from '../common/json-call-grammar.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

export const llama3JsonGrammar: ToolCallGrammar = {
  opener: '{',
  calls(tools: readonly ToolDef[], max: number): GrammarIR {
    const call = jsonCallObject(tools, 'parameters');
    return bounded(max, (again) => {
      if (again === null) return seq([call, TAG_GAP, END]);
      return seq([call, TAG_GAP, choice([[';', seq([lit(';'), TAG_GAP, again])]], END)]);
    });
  },
};
