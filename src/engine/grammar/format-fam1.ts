// fam1_coder / fam1_xml (Qwen3-Coder):
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>\n</function>\n</tool_call>
// A parameter whose schema admits strings is free text up to `</parameter>` (without the tags the
// parser would end it at); a string enum is one of its values; any other value is compact JSON
// valid for the schema. Each listed parameter appears at most once; required ones before
// `</function>`. What the parser reads back: src/chat/parsers/fam1.ts.

import { SchemaCompiler } from './json-schema-grammar.js';
import { MarkerDfa, seenBit } from './literals.js';
import { lit, literalSwitch, seq, TAG_GAP, until, xmlParams, type GNode } from './nodes.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';

const PARAM_CLOSE = '</parameter>';

/** Free text of a parameter value: ends at `</parameter>`; the parser's other boundaries are excluded. */
const TEXT_VALUE = until(new MarkerDfa([PARAM_CLOSE], ['<parameter=', '</function>', '</tool_call>']), true);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function paramsNode(tool: ToolDef): GNode {
  const schema = isRecord(tool.parameters) ? tool.parameters : {};
  const props = isRecord(schema.properties) ? Object.entries(schema.properties) : [];
  const required = Array.isArray(schema.required) ? schema.required : [];
  const compiler = new SchemaCompiler(schema);
  let bits = 0;
  const values = props.map(([key, s], i) => {
    if (required.includes(key)) bits |= seenBit(i + 1); // literal 0 is the closing tag
    return valueNode(compiler, s);
  });
  return xmlParams(
    props.map(([key]) => `<parameter=${key}>`),
    '</function>',
    values,
    bits,
  );
}

function valueNode(compiler: SchemaCompiler, schema: unknown): GNode {
  const b = compiler.branches(schema);
  if (b.string) return TEXT_VALUE;
  const strings = b.literals.filter((l) => l.startsWith('"'));
  if (!b.number && !b.object && !b.array && strings.length > 0 && strings.length === b.literals.length) {
    const raw = [...new Set(strings.map((l) => JSON.parse(l) as string))];
    return literalSwitch(raw.map((v) => `\n${v}\n${PARAM_CLOSE}`));
  }
  return seq([lit('\n'), compiler.compile(schema), lit(`\n${PARAM_CLOSE}`)]);
}

export const fam1: ToolCallFormat = {
  opener: '<tool_call>',
  call(tools: readonly ToolDef[]): GNode {
    const rest = tools.map((t) => seq([paramsNode(t), TAG_GAP, lit('</tool_call>')]));
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
