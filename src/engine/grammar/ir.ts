// A grammar as plain data: what a constrained job carries from the main thread to the engine
// worker. The main thread builds it (the tool-call formats in src/chat/tool-formats/ say what
// their calls look like); the worker compiles it against the vocabulary (compile-ir.ts) into the
// matcher's node graph. Being data, it survives structured cloning (shared subtrees stay shared)
// and its JSON is the key under which the compiled grammar is cached.
//
// The constructors here have the names and shapes of the node constructors they stand for
// (nodes.ts, json-schema-grammar.ts, xml-values.ts); the few that take a function (bounded,
// xmlParamsNode) call it right away and keep what it returns.

import { GrammarError } from './errors.js';
import { schemaProperties } from './param-values.js';

/** How a tag-delimited value is written (fam1, fam4_xml, glm4); see xml-values.ts. */
export interface XmlValueStyle {
  /** Written before a JSON or enum value and again before the closing tag (fam1's `\n`; may be ''). */
  frame: string;
  /** The tag that ends the value. */
  close: string;
  /** Tags the parser would end the value at (the next parameter, the end of the call). */
  forbidden: readonly string[];
  /** What the parser makes of a parameter whose schema declares no type: its text, or JSON when the text parses. */
  untyped: 'string' | 'json';
}

export type GrammarIR =
  /** Exact text. */
  | { kind: 'lit'; text: string }
  /** Bounded whitespace: around a format's tags, or between JSON tokens. */
  | { kind: 'gap'; of: 'tag' | 'json' }
  /** Only the end of output. */
  | { kind: 'end' }
  | { kind: 'seq'; parts: GrammarIR[] }
  /** One of the literals, each followed by its continuation (null: nothing). */
  | { kind: 'switch'; literals: string[]; then: (GrammarIR | null)[] | null }
  /** A choice by first byte; `eos` is what the end of output leads to. */
  | { kind: 'choice'; branches: [first: string | number[], to: GrammarIR][]; eos: GrammarIR | null }
  /** Any text up to and including `marker`. */
  | { kind: 'textUntil'; marker: string }
  /** 1..max items (max <= 0: unbounded): `more` (which holds `again`, the next item) or, for the last one allowed, `last`. */
  | { kind: 'repeat'; max: number; last: GrammarIR; more: GrammarIR }
  /** Inside a repeat's `more`: where the next item starts. */
  | { kind: 'again' }
  /** A JSON array of `items`, min..max of them (max -1: unbounded). */
  | { kind: 'jsonArray'; items: GrammarIR; min: number; max: number }
  /** An object (or a value's object branch) whose opening bracket a preceding literal already matched. */
  | { kind: 'opened'; of: GrammarIR }
  /** A call's arguments: an object valid for the JSON schema `parameters`, in JSON or Gemma's relaxed syntax. */
  | { kind: 'args'; syntax: 'json' | 'gemma'; parameters: unknown }
  /** One JSON value valid for `schema` (its own `$ref` root; true or {}: any JSON value). */
  | { kind: 'json'; schema: unknown }
  /** Text matching the whole regex (JavaScript syntax, the subset in regex.ts). */
  | { kind: 'regex'; pattern: string }
  /** Text matching the GBNF grammar's `root` rule (gbnf.ts). */
  | { kind: 'gbnf'; grammar: string }
  /** A call's Python keyword arguments after its `(`, through `)`. */
  | { kind: 'pythonKwargs'; parameters: unknown }
  /** Tagged parameters: `tags` opens each writable key, values as `style` writes them, then `close`. */
  | {
      kind: 'xmlParams';
      parameters: unknown;
      style: XmlValueStyle;
      tags: [key: string, tag: string][];
      close: string;
      valueOpen: GrammarIR[];
    };

/** What a constrained job enforces: its grammar and the tokens that end it. */
export interface GrammarConstraint {
  root: GrammarIR;
  /** End-of-turn / EOS ids: allowed only where the grammar may end, and then only they are. */
  endTokenIds: number[];
}

export const TAG_GAP: GrammarIR = { kind: 'gap', of: 'tag' };
export const JSON_GAP: GrammarIR = { kind: 'gap', of: 'json' };
export const END: GrammarIR = { kind: 'end' };
const AGAIN: GrammarIR = { kind: 'again' };

export const lit = (text: string): GrammarIR => ({ kind: 'lit', text });
export const seq = (parts: GrammarIR[]): GrammarIR => ({ kind: 'seq', parts });
export const textUntil = (marker: string): GrammarIR => ({ kind: 'textUntil', marker });
export const opened = (of: GrammarIR): GrammarIR => ({ kind: 'opened', of });

/**
 * One of `literals`, each followed by its continuation (null: nothing). A literal may be a prefix
 * of another only when it has no continuation.
 */
export function literalSwitch(literals: readonly string[], conts: readonly (GrammarIR | null)[] | null = null): GrammarIR {
  return { kind: 'switch', literals: [...literals], then: conts ? [...conts] : null };
}

/** A choice by first byte (a string's UTF-8 first bytes, or byte values); `eos`: the end of output leads there. */
export function choice(branches: [first: string | number[], to: GrammarIR][], eos: GrammarIR | null = null): GrammarIR {
  return { kind: 'choice', branches, eos };
}

export function jsonArray(items: GrammarIR, minItems: number, maxItems: number): GrammarIR {
  return { kind: 'jsonArray', items, min: minItems, max: maxItems };
}

/** A call's arguments: a JSON object valid for the tool's schema (any object when none is given). */
export const parametersNode = (parameters: unknown): GrammarIR => ({ kind: 'args', syntax: 'json', parameters });
/** A call's arguments as Gemma's relaxed object (value-syntaxes.ts). */
export const gemmaArgs = (parameters: unknown): GrammarIR => ({ kind: 'args', syntax: 'gemma', parameters });
/** One JSON value valid for `schema` (true or {}: any value; json_object mode is jsonValue({ type: 'object' })). */
export const jsonValue = (schema: unknown): GrammarIR => ({ kind: 'json', schema });
/** Text matching the whole regex (anchors implied). */
export const regexText = (pattern: string): GrammarIR => ({ kind: 'regex', pattern });
/** Text matching the GBNF grammar's `root`. */
export const gbnfText = (grammar: string): GrammarIR => ({ kind: 'gbnf', grammar });
/** `key=value, …)`, after a call's `(`. */
export const pythonKwargs = (parameters: unknown): GrammarIR => ({ kind: 'pythonKwargs', parameters });

/**
 * 1..max items (unbounded when max <= 0). `item(again)` is one item followed by the choice of
 * another (`again`, which starts a further item) or the end; `again` is null for the last item
 * allowed.
 */
export function bounded(max: number, item: (again: GrammarIR | null) => GrammarIR): GrammarIR {
  return { kind: 'repeat', max, last: item(null), more: item(AGAIN) };
}

/**
 * A tool's parameters as tagged elements: `openTag(key)` + value for each listed property whose
 * key the format can spell (null: it cannot), then `closeTag`. `valueOpen` goes before each value.
 */
export function xmlParamsNode(
  parameters: unknown,
  style: XmlValueStyle,
  openTag: (key: string) => string | null,
  closeTag: string,
  valueOpen: GrammarIR[] = [],
): GrammarIR {
  const tags: [string, string][] = [];
  for (const [key] of schemaProperties(parameters).props) {
    const tag = openTag(key);
    if (tag !== null) tags.push([key, tag]);
  }
  return { kind: 'xmlParams', parameters, style, tags, close: closeTag, valueOpen };
}

/** Throws GrammarError (no grammar: decoding stays unconstrained) unless `ok`. */
export function check(ok: boolean, what: string): void {
  if (!ok) throw new GrammarError(`grammar: ${what}`);
}
