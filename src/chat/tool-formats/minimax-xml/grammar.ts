// fam4_xml (MiniMax): one block of one or more invokes,
//   <minimax:tool_call>\n<invoke name="NAME">\n<parameter name="KEY">value</parameter>\n</invoke>\n</minimax:tool_call>
// Values are text the parser types by the schema (src/engine/grammar/xml-values.ts): free text up
// to `</parameter>` for string parameters, else compact JSON or an enum value. maxCalls counts the
// invokes. What the parser reads back: parser.ts.

import {
  bounded,
  check,
  END,
  lit,
  literalSwitch,
  seq,
  TAG_GAP,
  xmlParamsNode,
  type GrammarIR,
  type XmlValueStyle,
} from '../../../engine/grammar/ir.js';
import { xmlTagNameOk } from '../common/xml-calls.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

const BLOCK_OPEN = '<minimax:tool_call>';
const BLOCK_CLOSE = '</minimax:tool_call>';
const INVOKE = '<invoke name="';

const STYLE: XmlValueStyle = {
  frame: '',
  close: '</parameter>',
  forbidden: ['<parameter name=', '</invoke>', BLOCK_CLOSE],
  untyped: 'string',
};

export const minimaxXmlGrammar: ToolCallGrammar = {
  opener: BLOCK_OPEN,
  calls(tools: readonly ToolDef[], max: number): GrammarIR {
    for (const t of tools)
      check(xmlTagNameOk(t.name, true), `tool name ${JSON.stringify(t.name)} cannot be written as <invoke name="NAME">`);
    // After `<invoke name="`: the name (its `">` keeps names prefix-free), the parameters, `</invoke>`.
    const invoke = literalSwitch(
      tools.map((t) => `${t.name}">`),
      tools.map((t) => xmlParamsNode(t.parameters, STYLE, (k) => (xmlTagNameOk(k, true) ? `<parameter name="${k}">` : null), '</invoke>')),
    );
    const end = seq([TAG_GAP, END]);
    const invokes = bounded(max, (again) =>
      seq([invoke, TAG_GAP, again === null ? seq([lit(BLOCK_CLOSE), end]) : literalSwitch([INVOKE, BLOCK_CLOSE], [again, end])]),
    );
    return seq([lit(BLOCK_OPEN), TAG_GAP, lit(INVOKE), invokes]);
  },
};
