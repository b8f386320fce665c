// fam2: Mistral's [TOOL_CALLS] calls (a JSON list, or NAME[ARGS]{…} from tokenizer v11 on).

import type { ToolFormat } from '../format.js';
import { mistralGrammar } from './grammar.js';
import { MistralParser } from './parser.js';

export const mistral = {
  names: ['fam2'] as const,
  family: 'Mistral, Ministral, Devstral',
  parser: () => new MistralParser(),
  grammar: mistralGrammar,
  reasoningExits: ['[TOOL_CALLS]'],
} satisfies ToolFormat;
