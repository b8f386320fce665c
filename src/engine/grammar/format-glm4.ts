// glm4 (GLM-4.5 and later):
//   <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>value</arg_value>\n</tool_call>
// Values are text the parser types by the schema (xml-values.ts): free text up to `</arg_value>`
// for string parameters, else compact JSON or an enum value; a parameter whose schema declares no
// type is read as JSON when it parses, so it is written as JSON. What the parser reads back:
// src/chat/parsers/glm4.ts.

import { lit, literalSwitch, seq, TAG_GAP, type GNode } from './nodes.js';
import { check } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';
import { xmlParamsNode, type XmlValueStyle } from './xml-values.js';

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

export const glm4: ToolCallFormat = {
  opener: OPEN,
  call(tools: readonly ToolDef[]): GNode {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a glm4 name`);
    const body = (t: ToolDef) => {
      const params = xmlParamsNode(t.parameters, STYLE, keyTag, CLOSE);
      // Each value node gets its `<arg_value>` in front (after the line break the template writes).
      params.kids = params.kids.map((v) => (v === null ? null : seq([TAG_GAP, lit(VALUE_OPEN), v])));
      return params;
    };
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
