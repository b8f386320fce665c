// fam3 (Gemma): `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true}<tool_call|>`, one call per
// tag pair. Arguments are Gemma's relaxed objects (src/engine/grammar/value-syntaxes.ts: `<|"|>`
// strings, bare keys where they read back unchanged, numbers and literals as words), typed by the
// schema like JSON. Names are the ones the parser reads (`[\w.-]+`). What the parser reads back:
// parser.ts and gemma-args.ts.

import { check, gemmaArgs, lit, literalSwitch, opened, seq, type GrammarIR } from '../../../engine/grammar/ir.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';

const OPEN = '<|tool_call>';
const CLOSE = '<tool_call|>';
const NAME = /^[\w.-]+$/;

export const gemmaGrammar: ToolCallGrammar = {
  opener: OPEN,
  call(tools: readonly ToolDef[]): GrammarIR {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a fam3 name`);
    return seq([
      lit(OPEN),
      // `{` ends every name literal, so none prefixes another; the arguments start after it.
      literalSwitch(
        tools.map((t) => `call:${t.name}{`),
        tools.map((t) => opened(gemmaArgs(t.parameters))),
      ),
      lit(CLOSE),
    ]);
  },
};
