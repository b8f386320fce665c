// A call's arguments in the syntaxes that are not plain JSON objects: Gemma's relaxed object
// (fam3) and Python keyword arguments (pythonic). JSON arguments are json-schema-grammar.ts's
// parametersNode. What the parsers read back: src/chat/tool-formats/gemma/gemma-args.ts and
// src/chat/tool-formats/pythonic/python-literal.ts.

import { GrammarError } from './errors.js';
import { objectBranch, requiredBits, SchemaCompiler } from './json-schema-grammar.js';
import { freeObject, NO_OPEN, objectNode, type GNode } from './nodes.js';
import { GEMMA, PY_IDENTIFIER, PY_KEYWORD_EQ, PYTHON } from './value-syntaxes.js';

const KWARGS = { open: '(', close: ')', keyHasColon: true } as const;

/** Gemma's `{key:value,…}` for the tool's schema (any object when none is given). */
export function gemmaArgsNode(parameters: unknown): GNode {
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) return GEMMA.anyObject;
  return objectBranch(new SchemaCompiler(parameters, GEMMA).compile(parameters), GEMMA.anyObject);
}

/**
 * `key=value, …)` — after the call's `(`. Keyword names must be identifiers: others are left out,
 * and a required one makes the tool uncallable (GrammarError).
 */
export function pythonKwargsNode(parameters: unknown): GNode {
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
    for (const k of parts.required)
      if (!keys.includes(k)) throw new GrammarError(`grammar: required parameter ${JSON.stringify(k)} is not a Python keyword`);
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
