// Registry of tool-call parsers by `--tool-call-parser` value. A new wire format is one
// file in this folder plus one line here.

import type { ToolCallParser } from '../events.js';
import { BareJsonParser } from './bare-json.js';
import { Fam1Parser } from './fam1.js';
import { Fam2Parser } from './fam2.js';
import { Fam3Parser } from './fam3.js';
import { Fam4XmlParser } from './fam4-xml.js';
import { Glm4Parser } from './glm4.js';
import { HermesParser } from './hermes.js';
import { Llama3JsonParser } from './llama3-json.js';
import type { ToolSchema } from './param-values.js';
import { PythonicParser } from './pythonic.js';

export type { JsonSchema, ToolSchema } from './param-values.js';

interface Entry {
  create(tools?: readonly ToolSchema[]): ToolCallParser;
  /**
   * Openers that are the model's dedicated call tokens: seen inside a reasoning span,
   * they mean the model has started calling (see reasoning.ts). Formats whose calls
   * start with plain `{` or `[` have none.
   */
  reasoningExits: readonly string[];
}

const PARSERS = {
  hermes: { create: () => new HermesParser(), reasoningExits: ['<tool_call>'] },
  fam1_coder: { create: (tools) => new Fam1Parser(tools), reasoningExits: ['<tool_call>', '<function='] },
  fam1_xml: { create: (tools) => new Fam1Parser(tools), reasoningExits: ['<tool_call>', '<function='] },
  fam2: { create: () => new Fam2Parser(), reasoningExits: ['[TOOL_CALLS]'] },
  fam3: { create: () => new Fam3Parser(), reasoningExits: ['<|tool_call>'] },
  fam4_xml: { create: (tools) => new Fam4XmlParser(tools), reasoningExits: ['<minimax:tool_call>'] },
  bare_json: { create: () => new BareJsonParser(), reasoningExits: [] },
  llama3_json: { create: () => new Llama3JsonParser(), reasoningExits: ['<|python_tag|>'] },
  glm4: { create: (tools) => new Glm4Parser(tools), reasoningExits: ['<tool_call>'] },
  pythonic: { create: () => new PythonicParser(), reasoningExits: ['<|python_start|>'] },
} satisfies Record<string, Entry>;

export type ParserName = keyof typeof PARSERS;

export const PARSER_NAMES = Object.keys(PARSERS) as readonly ParserName[];

export function isParserName(name: string): name is ParserName {
  return Object.hasOwn(PARSERS, name);
}

/** A fresh parser for one response. `tools` gives schema-typed formats their value types. */
export function createToolCallParser(name: string, tools?: readonly ToolSchema[]): ToolCallParser {
  if (!isParserName(name)) throw new Error(`unknown tool-call parser '${name}' (known: ${PARSER_NAMES.join(', ')})`);
  return PARSERS[name].create(tools);
}

/** The tool-call openers that end an unterminated reasoning span for this format. */
export function reasoningExits(name: string): readonly string[] {
  return isParserName(name) ? PARSERS[name].reasoningExits : [];
}
