// Per chat sequence: which output stages read the model's text (reasoning splitter, tool-call
// parser) and what the engine enforces while sampling (tool-call grammar for tool_choice
// required / a named function, the thinking budget). Decided from the request, the model's chat
// settings and how the rendered prompt ends.
import type { GrammarConstraint } from '../engine/grammar/index.js';
import type { GenerationRequest, ThinkingBudget } from '../engine/types.js';
import type { Tokenizer } from '../model/tokenizer.js';
import { checkConstraint, SchemaError } from '../engine/grammar/index.js';
import { invalidParam } from '../common/api-error.js';
import { toolCallsIR, toolGrammarConstraint } from './tool-formats/constraint.js';
import { outputFormatConstraint } from './output-format.js';
import { createToolCallParser, reasoningExits, type ToolSchema } from './tool-formats/registry.js';
import {
  createReasoningSplitter,
  promptClosesReasoning,
  promptOpensReasoning,
  REASONING_FORMATS,
  type ReasoningFormat,
} from './reasoning.js';
import type { ModelRuntime } from './model-runtime.js';
import { reasoningStage, toolCallStage, type OutputStage } from './pipeline.js';
import type { ChatRequest } from './request.js';
import type { OutputEvent } from './events.js';

/** What the chat output plan is decided from: the request, the model, the rendered prompt. */
export interface ChatOutputContext {
  request: ChatRequest;
  runtime: ModelRuntime;
  /** The prompt as the chat template rendered it (does it leave a reasoning block open? …). */
  promptText: string;
}

/**
 * Per sequence: the output stages (reasoning splitter, tool-call parser) and what the engine must
 * enforce while sampling (tool grammar, thinking budget). Stages hold state: one plan per sequence.
 */
export interface ChatOutputPlan {
  stages: OutputStage[];
  /** Keep special tokens in the text even when the request skips them: the stages read tags that some models spell as special tokens. */
  keepSpecialTokens?: boolean;
  constraint?: GenerationRequest['constraint'];
  thinkingBudget?: GenerationRequest['thinkingBudget'];
}

/** Decides a sequence's ChatOutputPlan (planChatOutput below; tests pass their own). */
export type ChatOutputFactory = (ctx: ChatOutputContext) => ChatOutputPlan;

/** --disable-thinking: whatever reasoning the model still writes is dropped, not returned. */
const dropReasoning: OutputStage = {
  push: (events) => events.filter((e) => e.type !== 'reasoning'),
  finish: () => [],
};

function thinkingBudget(tokenizer: Tokenizer, format: ReasoningFormat, maxTokens: number, startsInside: boolean): ThinkingBudget | null {
  const openTokenId = tokenizer.tokenToId(format.open);
  const closeTokenId = tokenizer.tokenToId(format.close);
  // The budget watches the format's single tag tokens; a model that spells them in pieces gets none.
  if (openTokenId === undefined || closeTokenId === undefined) return null;
  return { maxTokens, startsInside, openTokenId, closeTokenId, forceTokenIds: tokenizer.encode(format.budgetClose) };
}

export interface TextStageOptions {
  /** Split reasoning off (the model reasons, or the prompt opened a think block). */
  reasoning: boolean;
  startsInReasoning: boolean;
  /** The model's reasoning tags (default `<think>`…`</think>`). */
  reasoningFormat?: ReasoningFormat;
  /** The tool-call format to parse; null: no tools, no parser. */
  toolCallParser: string | null;
  tools: readonly ToolSchema[];
}

/** The stages that read the model's text: reasoning splitter, then tool-call parser (also `svc parse`). */
export function textStages(o: TextStageOptions): OutputStage[] {
  const stages: OutputStage[] = [];
  if (o.reasoning) {
    // A call opener inside a reasoning span ends it (the call is promoted), whatever the reasoning format.
    const toolOpeners = o.toolCallParser !== null ? reasoningExits(o.toolCallParser) : [];
    stages.push(
      reasoningStage(createReasoningSplitter({ startsInReasoning: o.startsInReasoning, toolOpeners, format: o.reasoningFormat })),
    );
  }
  if (o.toolCallParser !== null) stages.push(toolCallStage(createToolCallParser(o.toolCallParser, o.tools)));
  return stages;
}

export function planChatOutput({ request, runtime, promptText }: ChatOutputContext): ChatOutputPlan {
  const { chat, tokenizer } = runtime;
  const stages: OutputStage[] = [];
  const reasoningFormat = REASONING_FORMATS[chat.reasoningFormat ?? 'think'];
  const startsInside = promptOpensReasoning(promptText, reasoningFormat);
  const splitReasoning = chat.reasoning || startsInside;
  const toolsOn = request.tools.length > 0 && request.toolChoice !== 'none';
  const reasons = splitReasoning && !chat.disableThinking && !promptClosesReasoning(promptText, reasoningFormat);

  stages.push(
    ...textStages({
      reasoning: splitReasoning,
      startsInReasoning: startsInside,
      reasoningFormat,
      toolCallParser: toolsOn ? chat.toolCallParser : null,
      tools: request.tools.map((t) => t.function),
    }),
  );
  if (splitReasoning && (chat.disableThinking || request.includeReasoning === false)) stages.push(dropReasoning);
  // parallel_tool_calls false: whatever the grammar allows, the answer ends at its first call.
  if (toolsOn && !request.parallelToolCalls) stages.push(firstCallOnly());

  let constraint: GrammarConstraint | null = null;
  const choice = request.toolChoice;
  // A framed format (harmony) has its reasoning in its own tool-call grammar, and its answer always
  // after answerStart; tag formats leave free reasoning up to their close tag.
  const framed = reasoningFormat.answerStart !== undefined;
  const afterReasoningEnd = framed ? null : reasons ? reasoningFormat.close : null;
  const maxCalls = typeof choice === 'object' || !request.parallelToolCalls ? 1 : 0;
  if (toolsOn && choice !== 'auto' && choice !== 'none') {
    const named = typeof choice === 'object' ? choice.function.name : null;
    constraint = toolGrammarConstraint({
      format: chat.toolCallParser,
      tools: request.tools
        .filter((t) => named === null || t.function.name === named)
        .map((t) => ({ name: t.function.name, parameters: t.function.parameters })),
      endTokenIds: runtime.eosTokenIds,
      // With reasoning, the calls are enforced once the reasoning block has ended (its close tag).
      afterReasoningEnd,
      maxCalls,
    });
    if (constraint) checkToolSchemas(constraint.root);
  } else if (request.outputFormat) {
    const tools = request.tools.map((t) => ({ name: t.function.name, parameters: t.function.parameters }));
    constraint = outputFormatConstraint({
      format: request.outputFormat,
      endTokenIds: runtime.eosTokenIds,
      afterReasoningEnd: reasoningFormat.answerStart ?? afterReasoningEnd,
      // Behind a framed format's free prefix the answer cannot be told from a call by its first byte.
      calls: toolsOn && !framed ? toolCallsIR(chat.toolCallParser, tools, maxCalls) : null,
    });
  }

  const budgets = [chat.maxThinkingBudget, request.thinkingBudget ?? null].filter((b): b is number => b !== null);
  const budget = budgets.length > 0 ? Math.min(...budgets) : null;
  return {
    stages,
    // Mistral's [TOOL_CALLS], Gemma's <|tool_call>, Llama's <|python_tag|> … are special tokens:
    // the parsers must see them (as vLLM keeps them for its Mistral parser). Stop tokens stay hidden.
    keepSpecialTokens: stages.length > 0,
    constraint,
    thinkingBudget: reasons && budget !== null ? thinkingBudget(tokenizer, reasoningFormat, budget, startsInside) : null,
  };
}

/** A tool schema the grammar cannot enforce as written (an unknown keyword, a dangling $ref) is the client's error. */
function checkToolSchemas(root: GrammarConstraint['root']): void {
  try {
    checkConstraint(root);
  } catch (err) {
    if (err instanceof SchemaError) throw invalidParam('tools', `Invalid tool parameters schema: ${err.message.replace(/^grammar: /, '')}`);
    throw err;
  }
}

/** Ends the answer at its first tool call: a second call's start (and all after it) is dropped and the output stops. */
function firstCallOnly(): OutputStage {
  let ended = false;
  return {
    push(events) {
      if (ended) return [];
      const out: OutputEvent[] = [];
      for (const e of events) {
        if ((e.type === 'tool_call_start' || e.type === 'tool_call_args') && e.index > 0) {
          ended = true;
          break;
        }
        out.push(e);
      }
      return out;
    },
    finish: () => [],
    get ended() {
      return ended;
    },
  };
}
