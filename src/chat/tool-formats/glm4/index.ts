// glm4: GLM-4.5's <tool_call>NAME with <arg_key>/<arg_value> pairs.

import type { ToolFormat } from '../format.js';
import { glm4Grammar } from './grammar.js';
import { Glm4Parser } from './parser.js';

export const glm4 = {
  names: ['glm4'] as const,
  family: 'GLM-4.5 and later',
  parser: (tools) => new Glm4Parser(tools),
  grammar: glm4Grammar,
  reasoningExits: ['<tool_call>'],
} satisfies ToolFormat;
