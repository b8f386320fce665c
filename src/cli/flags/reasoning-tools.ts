// The "Reasoning and tools" group of the flag table, in help and README order.
import { TOOL_CALL_PARSER_NAMES, type ToolCallParserName } from '../../chat/tool-formats/registry.js';
import { flag } from './spec.js';
import { choice, integer, switchFlag } from './values.js';

// The choices come from the tool-format registry: a new format is a CLI choice with nothing to edit here.
export const TOOL_CALL_PARSERS: readonly ToolCallParserName[] = TOOL_CALL_PARSER_NAMES;
export type ToolCallParser = ToolCallParserName;

export const REASONING_TOOLS_FLAGS = [
  flag({
    name: 'disable-thinking',
    key: 'disableThinking',
    group: 'Reasoning and tools',
    value: switchFlag(true),
    default: false,
    help: 'Kill-switch for `<think>` blocks: no reasoning is generated.',
    built: true,
  }),
  flag({
    name: 'max-thinking-budget',
    key: 'maxThinkingBudget',
    group: 'Reasoning and tools',
    value: integer(0, undefined, 'tokens'),
    default: undefined,
    defaultText: 'from MODEL.toml',
    help: 'Per-request ceiling on reasoning tokens.',
    built: true,
  }),
  flag({
    name: 'tool-call-parser',
    key: 'toolCallParser',
    group: 'Reasoning and tools',
    value: choice(TOOL_CALL_PARSERS, 'parser'),
    default: undefined,
    defaultText: 'automatic from the model type (MODEL.toml)',
    help: "Wire format of the model's tool calls.",
    built: true,
  }),
  flag({
    name: 'tool-max-tokens',
    key: 'toolMaxTokens',
    group: 'Reasoning and tools',
    value: integer(1, undefined, 'tokens'),
    default: 8192,
    help: 'Hard cap on the whole completion (prose, reasoning, tool arguments) when tools are present.',
    built: true,
  }),
] as const;
