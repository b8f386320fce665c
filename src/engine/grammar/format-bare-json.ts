// bare_json: untagged call objects `{"name": "NAME", "arguments": {…}}`, one after another
// (whitespace between), or one JSON array of them `[{…}, {…}]`; the first byte picks the form.
// maxCalls bounds either. What the parser reads back: src/chat/parsers/bare-json.ts.

import { jsonCallObject } from './format-hermes.js';
import { alt, altSet, END, EOS, jsonArray, seq, TAG_GAP, type GNode } from './nodes.js';
import { bounded } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';

export const bareJson: ToolCallFormat = {
  opener: '{',
  calls(tools: readonly ToolDef[], max: number): GNode {
    const call = jsonCallObject(tools, 'arguments');
    const objects = bounded(max, (again) => {
      if (again === null) return seq([call, TAG_GAP, END]);
      const more = alt();
      altSet(more, '{', again);
      more.kids[EOS] = END;
      return seq([call, TAG_GAP, more]);
    });
    const list = seq([jsonArray(call, 1, max > 0 ? max : -1), TAG_GAP, END]);
    const start = alt();
    altSet(start, '{', objects);
    altSet(start, '[', list);
    return start;
  },
};
