// fam2 (Mistral): `[TOOL_CALLS]` then either
//   - v11+: `NAME[ARGS]{json}` (or `NAME{json}`), each further call after a new `[TOOL_CALLS]`, or
//   - pre-v11: one JSON array `[{"name": "NAME", "arguments": {…}}, …]`;
// the byte after the first `[TOOL_CALLS]` picks the form (a name character or `[`), so a model
// writes whichever its tokenizer version taught it. maxCalls bounds either. Names are the ones the
// parser reads (`[\w.-]+`). What the parser reads back: parser.ts.

import {
  bounded,
  check,
  choice,
  END,
  jsonArray,
  lit,
  literalSwitch,
  opened,
  parametersNode,
  seq,
  TAG_GAP,
  type GrammarIR,
} from '../../../engine/grammar/ir.js';
import { jsonCallObject } from '../common/json-call-grammar.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

const OPEN = '[TOOL_CALLS]';
const NAME = /^[\w.-]+$/;

export const mistralGrammar: ToolCallGrammar = {
  opener: OPEN,
  calls(tools: readonly ToolDef[], max: number): GrammarIR {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a fam2 name`);
    // The name literals end in `{` (or `[ARGS]{`), so none prefixes another; the arguments object
    // starts after its `{`.
    const names: string[] = [];
    const args: GrammarIR[] = [];
    for (const t of tools) {
      const a = opened(parametersNode(t.parameters));
      names.push(`${t.name}[ARGS]{`, `${t.name}{`);
      args.push(a, a);
    }
    const call = literalSwitch(names, args);
    const v11 = bounded(max, (again) => {
      if (again === null) return seq([call, TAG_GAP, END]);
      return seq([call, TAG_GAP, choice([['[', seq([lit(OPEN), again])]], END)]);
    });
    const list = seq([jsonArray(jsonCallObject(tools, 'arguments'), 1, max > 0 ? max : -1), TAG_GAP, END]);
    const form = choice([
      ['[', list],
      [[...new Set(tools.map((t) => t.name.charCodeAt(0)))], v11],
    ]);
    return seq([lit(OPEN), form]);
  },
};
