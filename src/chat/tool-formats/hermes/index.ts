// hermes: JSON calls inside <tool_call> tags (Qwen2.5, Qwen3, Hermes).

import type { ToolFormat } from '../format.js';
import { hermesGrammar } from './grammar.js';
import { HermesParser } from './parser.js';

export const hermes = {
  names: ['hermes'] as const,
  family: 'Qwen2.5, Qwen3, Hermes',
  parser: () => new HermesParser(),
  grammar: hermesGrammar,
  reasoningExits: ['<tool_call>'],
} satisfies ToolFormat;
