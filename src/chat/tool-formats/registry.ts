// The tool-call wire formats: one folder each (parser, grammar, names), listed here. The parser
// factory, the grammar builder (constraint.ts), the `--tool-call-parser` choices and the
// MODEL.toml check all derive from this list. A new format is one folder plus one line here.
//
// The seed's names stay the CLI / MODEL.toml spellings; what each one is:
//   hermes                  hermes/           Qwen2.5, Qwen3, Hermes: JSON in <tool_call>
//   fam1_coder, fam1_xml    qwen3-coder-xml/  Qwen3-Coder: <function=NAME><parameter=KEY>
//   fam2                    mistral/          Mistral: [TOOL_CALLS]
//   fam3                    gemma/            Gemma: <|tool_call>call:NAME{…}<tool_call|>
//   fam4_xml                minimax-xml/      MiniMax: <minimax:tool_call><invoke name="NAME">
//   bare_json               bare-json/        untagged JSON call objects (SmolLM2)
//   llama3_json             llama3-json/      Llama 3.x: {"name", "parameters"}
//   glm4                    glm4/             GLM-4.5+: <tool_call>NAME<arg_key>/<arg_value>
//   pythonic                pythonic/         Llama 3.2 / 4: [f(a=1)]
//   harmony, openai         harmony/          GPT-OSS: <|channel|>commentary to=functions.NAME<|message|>{…}

import type { ToolCallParser } from '../events.js';
import { bareJson } from './bare-json/index.js';
import type { ToolFormat, ToolSchema } from './format.js';
import { gemma } from './gemma/index.js';
import { glm4 } from './glm4/index.js';
import { harmony } from './harmony/index.js';
import { hermes } from './hermes/index.js';
import { llama3Json } from './llama3-json/index.js';
import { minimaxXml } from './minimax-xml/index.js';
import { mistral } from './mistral/index.js';
import { pythonic } from './pythonic/index.js';
import { qwen3CoderXml } from './qwen3-coder-xml/index.js';

export type { JsonSchema, ToolDef, ToolFormat, ToolSchema } from './format.js';

/** In the order the CLI lists their names. */
export const TOOL_FORMATS = [hermes, qwen3CoderXml, mistral, gemma, minimaxXml, bareJson, llama3Json, glm4, pythonic, harmony] as const;

export type ToolCallParserName = (typeof TOOL_FORMATS)[number]['names'][number];

/** Every accepted `--tool-call-parser` / MODEL.toml `tool_call_parser` value. */
export const TOOL_CALL_PARSER_NAMES: readonly ToolCallParserName[] = TOOL_FORMATS.flatMap((f) => f.names);

const BY_NAME = new Map<string, ToolFormat>(TOOL_FORMATS.flatMap((f) => f.names.map((n) => [n, f] as const)));

export function isToolCallParserName(name: string): name is ToolCallParserName {
  return BY_NAME.has(name);
}

/** The format a parser name selects, or undefined. */
export function toolFormat(name: string): ToolFormat | undefined {
  return BY_NAME.get(name);
}

/** A fresh parser for one response. `tools` gives schema-typed formats their value types. */
export function createToolCallParser(name: string, tools?: readonly ToolSchema[]): ToolCallParser {
  const format = BY_NAME.get(name);
  if (!format) throw new Error(`unknown tool-call parser '${name}' (known: ${TOOL_CALL_PARSER_NAMES.join(', ')})`);
  return format.parser(tools);
}

/** The tool-call openers that end an unterminated reasoning span for this format. */
export function reasoningExits(name: string): readonly string[] {
  return BY_NAME.get(name)?.reasoningExits ?? [];
}
