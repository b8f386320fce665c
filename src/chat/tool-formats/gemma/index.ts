// fam3: Gemma's <|tool_call>call:NAME{…}<tool_call|> calls with relaxed argument objects.

import type { ToolFormat } from '../format.js';
import { gemmaGrammar } from './grammar.js';
import { GemmaParser } from './parser.js';

export const gemma = {
  names: ['fam3'] as const,
  family: 'Gemma',
  parser: () => new GemmaParser(),
  grammar: gemmaGrammar,
  reasoningExits: ['<|tool_call>'],
} satisfies ToolFormat;
