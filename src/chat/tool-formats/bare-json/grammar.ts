// bare_json: untagged call objects `{"name": "NAME", "arguments": {…}}`, one after another
// (whitespace between), or one JSON array of them `[{…}, {…}]`; the first byte picks the form.
// maxCalls bounds either. What the parser reads back: parser.ts.

import { bounded, choice, END, jsonArray, seq, TAG_GAP, type GrammarIR } from '../../../engine/grammar/ir.js';
import { jsonCallObject } from '../common/json-call-grammar.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

export const bareJsonGrammar: ToolCallGrammar = {
  opener: '{',
  calls(tools: readonly ToolDef[], max: number): GrammarIR {
    const call = jsonCallObject(tools, 'arguments');
    const objects = bounded(max, (again) => {
      if (again === null) return seq([call, TAG_GAP, END]);
      return seq([call, TAG_GAP, choice([['{', again]], END)]);
    });
    const list = seq([jsonArray(call, 1, max > 0 ? max : -1), TAG_GAP, END]);
    return choice([
      ['{', objects],
      ['[', list],
    ]);
  },
};
