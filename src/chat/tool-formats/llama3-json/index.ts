// llama3_json: Llama 3.x JSON calls {"name", "parameters"}, optionally after <|python_tag|>.

import type { ToolFormat } from '../format.js';
import { llama3JsonGrammar } from './grammar.js';
import { Llama3JsonParser } from './parser.js';

export const llama3Json = {
  names: ['llama3_json'] as const,
  family: 'Llama 3.x',
  parser: () => new Llama3JsonParser(),
  grammar: llama3JsonGrammar,
  reasoningExits: ['<|python_tag|>'],
} satisfies ToolFormat;
