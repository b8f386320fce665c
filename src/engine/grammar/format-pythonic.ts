// pythonic (Llama 3.2 / Llama 4): `[NAME(key=value, …), NAME(…)]` with Python literal values
// (value-syntaxes.ts: 'strings', True / False / None, numbers, [lists], {'key': value} dicts),
// typed by the schema like JSON. Keyword names must be identifiers (others are left out; a
// required one makes the tool uncallable here). maxCalls bounds the list. What the parser reads
// back: src/chat/parsers/pythonic.ts and python-literal.ts.

import { requiredBits, SchemaCompiler } from './json-schema-grammar.js';
import { alt, altSet, END, freeObject, JSON_GAP, lit, literalSwitch, objectNode, seq, TAG_GAP, type GNode, NO_OPEN } from './nodes.js';
import { bounded, check } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';
import { PY_IDENTIFIER, PY_KEYWORD_EQ, PYTHON } from './value-syntaxes.js';

/** The names the parser reads: an identifier start, then word characters and dots. */
const NAME = /^[A-Za-z_][\w.]*$/;
const KWARGS = { open: '(', close: ')', keyHasColon: true } as const;

/** `key=value, …)` — after the call's `(`. */
function kwargsNode(parameters: unknown): GNode {
  const compiler = new SchemaCompiler(parameters, PYTHON);
  const parts = compiler.objectParts(parameters);
  let node: GNode;
  if (parts.free) {
    node = freeObject(parts.value, false, PY_KEYWORD_EQ, KWARGS);
  } else {
    const keys: string[] = [];
    const values: GNode[] = [];
    parts.keys.forEach((k, i) => {
      if (!PY_IDENTIFIER.test(k)) return;
      keys.push(k);
      values.push(parts.values[i]);
    });
    for (const k of parts.required) check(keys.includes(k), `required parameter ${JSON.stringify(k)} is not a Python keyword`);
    node = objectNode(
      keys.map((k) => `${k}=`),
      values,
      requiredBits(keys, parts.required),
      KWARGS,
    );
  }
  node.flags |= NO_OPEN;
  return node;
}

export const pythonic: ToolCallFormat = {
  opener: '[',
  calls(tools: readonly ToolDef[], max: number): GNode {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a Python name`);
    // `(` ends every name literal, so none prefixes another.
    const call = literalSwitch(
      tools.map((t) => `${t.name}(`),
      tools.map((t) => kwargsNode(t.parameters)),
    );
    const close = seq([lit(']'), TAG_GAP, END]);
    const calls = bounded(max, (again) => {
      if (again === null) return seq([call, JSON_GAP, close]);
      const more = alt();
      altSet(more, ',', seq([lit(','), JSON_GAP, again]));
      altSet(more, ']', close);
      return seq([call, JSON_GAP, more]);
    });
    return seq([lit('['), JSON_GAP, calls]);
  },
};
