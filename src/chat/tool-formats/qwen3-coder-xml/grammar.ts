// fam1_coder / fam1_xml (Qwen3-Coder):
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>\n</function>\n</tool_call>
// Values are text the parser types by the schema (src/engine/grammar/xml-values.ts): free text up
// to `</parameter>` for string parameters, else `\n` + compact JSON or an enum value + `\n`. Each
// listed parameter appears at most once; required ones before `</function>`. What the parser reads
// back: parser.ts.

import { check, lit, literalSwitch, seq, TAG_GAP, xmlParamsNode, type GrammarIR, type XmlValueStyle } from '../../../engine/grammar/ir.js';
import { xmlTagNameOk } from '../common/xml-calls.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

const STYLE: XmlValueStyle = {
  frame: '\n',
  close: '</parameter>',
  forbidden: ['<parameter=', '</function>', '</tool_call>'],
  untyped: 'string',
};

export const qwen3CoderXmlGrammar: ToolCallGrammar = {
  opener: '<tool_call>',
  call(tools: readonly ToolDef[]): GrammarIR {
    for (const t of tools) check(xmlTagNameOk(t.name, false), `tool name ${JSON.stringify(t.name)} cannot be written as <function=NAME>`);
    const rest = tools.map((t) =>
      seq([
        xmlParamsNode(t.parameters, STYLE, (k) => (xmlTagNameOk(k, false) ? `<parameter=${k}>` : null), '</function>'),
        TAG_GAP,
        lit('</tool_call>'),
      ]),
    );
    return seq([
      lit('<tool_call>'),
      TAG_GAP,
      lit('<function='),
      // `>` ends every name, so no name is a prefix of another.
      literalSwitch(
        tools.map((t) => `${t.name}>`),
        rest,
      ),
    ]);
  },
};
