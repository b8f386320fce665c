// fam3 (Gemma): `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true}<tool_call|>`, one call per
// tag pair. Arguments are Gemma's relaxed objects (value-syntaxes.ts: `<|"|>` strings, bare keys
// where they read back unchanged, numbers and literals as words), typed by the schema like JSON.
// Names are the ones the parser reads (`[\w.-]+`). What the parser reads back:
// src/chat/parsers/fam3.ts and gemma-args.ts.

import { objectBranch, SchemaCompiler } from './json-schema-grammar.js';
import { lit, literalSwitch, opened, seq, type GNode } from './nodes.js';
import { check } from './repeat.js';
import type { ToolCallFormat, ToolDef } from './tool-call-grammar.js';
import { GEMMA } from './value-syntaxes.js';

const OPEN = '<|tool_call>';
const CLOSE = '<tool_call|>';
const NAME = /^[\w.-]+$/;

function argsNode(parameters: unknown): GNode {
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) return GEMMA.anyObject;
  return objectBranch(new SchemaCompiler(parameters, GEMMA).compile(parameters), GEMMA.anyObject);
}

export const fam3: ToolCallFormat = {
  opener: OPEN,
  call(tools: readonly ToolDef[]): GNode {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a fam3 name`);
    return seq([
      lit(OPEN),
      // `{` ends every name literal, so none prefixes another; the arguments start after it.
      literalSwitch(
        tools.map((t) => `call:${t.name}{`),
        tools.map((t) => opened(argsNode(t.parameters))),
      ),
      lit(CLOSE),
    ]);
  },
};
