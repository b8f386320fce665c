// What a tool-call wire format is made of: each folder beside this file describes one format with
// a ToolFormat (its index.ts), and registry.ts lists them.

import type { GrammarIR } from '../../engine/grammar/ir.js';
import type { JsonSchema } from '../../engine/grammar/param-values.js';
import type { ToolCallParser } from '../events.js';

export type { JsonSchema };

/** A tool as the parsers see it: an OpenAI `function` object fits as is. */
export interface ToolSchema {
  name: string;
  parameters?: JsonSchema;
}

/** A tool as the grammars see it. */
export interface ToolDef {
  name: string;
  /** The tool's JSON schema for its arguments (OpenAI `function.parameters`); absent = any object. */
  parameters?: unknown;
}

/**
 * How a format's calls are constrained, as grammar data (src/engine/grammar/ir.ts). Most formats
 * give `call` (one whole call, starting with `opener`): calls then follow each other, whitespace
 * between, and the end comes after any of them. Formats whose calls share a wrapper or a separator
 * (a list, a block, `;`) give `calls` instead: the whole output, 1..max calls (max 0 = no limit),
 * ending in END. Either throws GrammarError (check()) when the tools cannot be written in the
 * format: decoding then stays unconstrained.
 */
export interface ToolCallGrammar {
  /** The text the calls start with (for `call`: it tells "another call" from "end of turn"). */
  opener: string;
  call?(tools: readonly ToolDef[]): GrammarIR;
  calls?(tools: readonly ToolDef[], max: number): GrammarIR;
}

export interface ToolFormat {
  /** The `--tool-call-parser` / MODEL.toml `tool_call_parser` values that select it. */
  names: readonly string[];
  /** The model family that writes it, for people reading the registry. */
  family: string;
  /** A fresh streaming parser for one response; `tools` gives schema-typed formats their value types. */
  parser(tools?: readonly ToolSchema[]): ToolCallParser;
  grammar: ToolCallGrammar;
  /**
   * Openers that are the model's dedicated call tokens: seen inside a reasoning span, they mean
   * the model has started calling (see reasoning.ts). Formats whose calls start with plain `{` or
   * `[` have none.
   */
  reasoningExits: readonly string[];
}
