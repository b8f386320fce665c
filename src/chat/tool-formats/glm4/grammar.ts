// glm4 (GLM-4.5 and later):
//   <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>value</arg_value>\n</tool_call>
// Values are text the parser types by the schema (src/engine/grammar/xml-values.ts): free text up
// to `</arg_value>` for string parameters, else compact JSON or an enum value; a parameter whose
// schema declares no type is read as JSON when it parses, so it is written as JSON. What the parser
// reads back: parser.ts.

import { check, lit, literalSwitch, seq, TAG_GAP, xmlParamsNode, type GrammarIR, type XmlValueStyle } from '../../../engine/grammar/ir.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const KEY_OPEN = '<arg_key>';
const KEY_CLOSE = '</arg_key>';
const VALUE_OPEN = '<arg_value>';
/** The names the parser reads (up to the line end). */
const NAME = /^[\w.:-]+$/;

const STYLE: XmlValueStyle = {
  frame: '',
  close: '</arg_value>',
  forbidden: [KEY_OPEN, CLOSE],
  untyped: 'json',
};

/** `<arg_key>KEY</arg_key>` + the value's opening tag, where the parser reads the key back unchanged. */
function keyTag(key: string): string | null {
  const ok = key === key.trim() && key.length < 200 && !key.includes(KEY_CLOSE);
  return ok ? `${KEY_OPEN}${key}${KEY_CLOSE}` : null;
}

export const glm4Grammar: ToolCallGrammar = {
  opener: OPEN,
  call(tools: readonly ToolDef[]): GrammarIR {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a glm4 name`);
    // Each value gets its `<arg_value>` in front (after the line break the template writes).
    const body = (t: ToolDef) => xmlParamsNode(t.parameters, STYLE, keyTag, CLOSE, [TAG_GAP, lit(VALUE_OPEN)]);
    return seq([
      lit(OPEN),
      // `\n` ends every name, so no name is a prefix of another.
      literalSwitch(
        tools.map((t) => `${t.name}\n`),
        tools.map(body),
      ),
    ]);
  },
};
