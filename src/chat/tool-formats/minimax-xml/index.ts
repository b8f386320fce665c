// fam4_xml: MiniMax's XML calls (<minimax:tool_call><invoke name="NAME">…).

import type { ToolFormat } from '../format.js';
import { minimaxXmlGrammar } from './grammar.js';
import { MinimaxXmlParser } from './parser.js';

export const minimaxXml = {
  names: ['fam4_xml'] as const,
  family: 'MiniMax',
  parser: (tools) => new MinimaxXmlParser(tools),
  grammar: minimaxXmlGrammar,
  reasoningExits: ['<minimax:tool_call>'],
} satisfies ToolFormat;
