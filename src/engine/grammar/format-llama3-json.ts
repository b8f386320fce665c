// llama3_json (Llama 3.x): `{"name": "NAME", "parameters": {…}}`, several separated by `; `.
// The plain form (the parser also takes a leading `<|python_tag|>`). What the parser reads back:
// src/chat/parsers/llama3-json.ts.

import { jsonCallObject } from './format-hermes.js';
import { alt, altSet, END, EOS, lit, seq, TAG_GAP, type GNode } from './nodes.js';
import { bounded } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';

export const llama3Json: ToolCallFormat = {
  opener: '{',
  calls(tools: readonly ToolDef[], max: number): GNode {
    const call = jsonCallObject(tools, 'parameters');
    return bounded(max, (again) => {
      if (again === null) return seq([call, TAG_GAP, END]);
      const more = alt();
      altSet(more, ';', seq([lit(';'), TAG_GAP, again]));
      more.kids[EOS] = END;
      return seq([call, TAG_GAP, more]);
    });
  },
};
