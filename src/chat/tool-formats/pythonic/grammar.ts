// pythonic (Llama 3.2 / Llama 4): `[NAME(key=value, …), NAME(…)]` with Python literal values
// (src/engine/grammar/value-syntaxes.ts: 'strings', True / False / None, numbers, [lists],
// {'key': value} dicts), typed by the schema like JSON. Keyword names must be identifiers (others
// are left out; a required one makes the tool uncallable here). maxCalls bounds the list. What the
// parser reads back: parser.ts and python-literal.ts.

import {
  bounded,
  check,
  choice,
  END,
  JSON_GAP,
  lit,
  literalSwitch,
  pythonKwargs,
  seq,
  TAG_GAP,
  type GrammarIR,
} from '../../../engine/grammar/ir.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

/** The names the parser reads: an identifier start, then word characters and dots. */
const NAME = /^[A-Za-z_][\w.]*$/;

export const pythonicGrammar: ToolCallGrammar = {
  opener: '[',
  calls(tools: readonly ToolDef[], max: number): GrammarIR {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a Python name`);
    // `(` ends every name literal, so none prefixes another.
    const call = literalSwitch(
      tools.map((t) => `${t.name}(`),
      tools.map((t) => pythonKwargs(t.parameters)),
    );
    const close = seq([lit(']'), TAG_GAP, END]);
    const calls = bounded(max, (again) => {
      if (again === null) return seq([call, JSON_GAP, close]);
      return seq([
        call,
        JSON_GAP,
        choice([
          [',', seq([lit(','), JSON_GAP, again])],
          [']', close],
        ]),
      ]);
    });
    return seq([lit('['), JSON_GAP, calls]);
  },
};
