// The protocol-neutral request: what every protocol decoder produces and the prompt builder,
// the engine submission and the output pipeline consume. No wire names here (camelCase, decided
// defaults); each protocol maps its own fields onto this.
import type { LogitBias, SamplingParams } from '../engine/types.js';

export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; /** JSON-encoded arguments object. */ arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  /** Text content; null on an assistant message that only carries tool calls. */
  content: string | null;
  /** Earlier reasoning of an assistant turn, when the client sends it back. */
  reasoning?: string;
  toolCalls?: ChatToolCall[];
  /** On tool messages: the id of the call answered. */
  toolCallId?: string;
  /** On tool messages: the tool's name. */
  name?: string;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/**
 * What the answer (after any reasoning) must be, enforced by the grammar engine: any JSON object,
 * a JSON value valid for a schema, text matching a regex, one of some strings, or text matching a
 * GBNF grammar. `param` is the request field it came from (for errors).
 */
export type OutputFormat = (
  | { type: 'json_object' }
  | { type: 'json_schema'; schema: unknown; name?: string; strict?: boolean }
  | { type: 'regex'; pattern: string }
  | { type: 'choice'; choices: string[] }
  | { type: 'grammar'; grammar: string }
) & { param: string };

/** Everything about how to generate, shared by every protocol. */
export interface GenerationOptions {
  sampling: SamplingParams;
  /** Requested completion length; null = whatever room the context has left. */
  maxTokens: number | null;
  /** Stop strings: text ends before the first match, the match is not returned. */
  stop: string[];
  /** Extra token ids that end generation (besides EOS unless ignoreEos). */
  stopTokenIds: number[];
  ignoreEos: boolean;
  /** Independent sequences to run for the same prompt. */
  n: number;
  /** null = no log-probabilities; k ≥ 0 = sampled token's logprob plus the top k alternatives. */
  logprobs: number | null;
  skipSpecialTokens: boolean;
  stream: boolean;
  /** Streaming: send a usage frame before [DONE]. */
  includeUsage: boolean;
  /** A structured-output constraint on the answer (response_format, guided_*, …); absent = free text. */
  outputFormat?: OutputFormat | null;
  // Logits shaping (OpenAI's and vLLM's fields); left out = off.
  /** Bias added to tokens' logits (OpenAI logit_bias; ids are checked against the vocabulary). */
  logitBias?: LogitBias | null;
  /** OpenAI presence_penalty, in [-2, 2]; 0 = off. */
  presencePenalty?: number;
  /** OpenAI frequency_penalty, in [-2, 2]; 0 = off. */
  frequencyPenalty?: number;
  /** vLLM repetition_penalty, > 0; 1 = off. */
  repetitionPenalty?: number;
  /** vLLM min_tokens: no stop token or stop string ends the output before this many tokens; 0 = off. */
  minTokens?: number;
  /** vLLM bad_words: words the output must not contain (tokenized when the job is made). */
  badWords?: string[];
}

export interface ChatRequest extends GenerationOptions {
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** 'none' when the request has no tools. */
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
  /** Extra variables for the chat template (enable_thinking …). */
  chatTemplateKwargs: Record<string, unknown>;
  /** This request's cap on reasoning tokens (Anthropic's thinking.budget_tokens); the smaller of it and the model's applies. */
  thinkingBudget?: number | null;
  /** false: the model still reasons, but its reasoning is not returned (vLLM's include_reasoning). */
  includeReasoning?: boolean;
  /** The request used OpenAI's legacy `functions`: the call comes back as `function_call`. */
  legacyFunctions?: boolean;
}

/** One prompt of a plain-completions request: text to tokenize, or token ids as given. */
export type PromptInput = { text: string } | { tokens: number[] };

export interface CompletionRequest extends GenerationOptions {
  /** A batch: each prompt is run n times. */
  prompts: PromptInput[];
  /** Return the prompt text before the completion. */
  echo: boolean;
}
