// harmony: OpenAI's message format for GPT-OSS. Calls are messages to `functions.NAME`; the
// reasoning splitter of the same folder (splitter.ts, reasoning format `harmony`) routes the
// channels in front of the parser. `openai` is vLLM's name for this parser.

import type { ToolFormat } from '../format.js';
import { harmonyGrammar } from './grammar.js';
import { HarmonyToolParser } from './parser.js';

export const harmony = {
  names: ['harmony', 'openai'] as const,
  family: 'GPT-OSS',
  parser: () => new HarmonyToolParser(),
  grammar: harmonyGrammar,
  // The harmony splitter reads the framing itself; the tag splitters have nothing to exit on.
  reasoningExits: [],
} satisfies ToolFormat;
