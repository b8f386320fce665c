// fam1_coder / fam1_xml: Qwen3-Coder's XML calls (<function=NAME><parameter=KEY>), with or without <tool_call>.

import type { ToolFormat } from '../format.js';
import { qwen3CoderXmlGrammar } from './grammar.js';
import { Qwen3CoderXmlParser } from './parser.js';

export const qwen3CoderXml = {
  names: ['fam1_coder', 'fam1_xml'] as const,
  family: 'Qwen3-Coder',
  parser: (tools) => new Qwen3CoderXmlParser(tools),
  grammar: qwen3CoderXmlGrammar,
  reasoningExits: ['<tool_call>', '<function='],
} satisfies ToolFormat;
