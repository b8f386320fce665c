// bare_json: untagged JSON call objects, or a JSON array of them.

import type { ToolFormat } from '../format.js';
import { bareJsonGrammar } from './grammar.js';
import { BareJsonParser } from './parser.js';

export const bareJson = {
  names: ['bare_json'] as const,
  family: 'SmolLM2 (and any model writing untagged JSON calls)',
  parser: () => new BareJsonParser(),
  grammar: bareJsonGrammar,
  reasoningExits: [],
} satisfies ToolFormat;
