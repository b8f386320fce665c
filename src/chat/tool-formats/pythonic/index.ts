// pythonic: a Python list of calls [f(a=1), g(b="x")] (Llama 3.2 / Llama 4).

import type { ToolFormat } from '../format.js';
import { pythonicGrammar } from './grammar.js';
import { PythonicParser } from './parser.js';

export const pythonic = {
  names: ['pythonic'] as const,
  family: 'Llama 3.2, Llama 4',
  parser: () => new PythonicParser(),
  grammar: pythonicGrammar,
  reasoningExits: ['<|python_start|>'],
} satisfies ToolFormat;
