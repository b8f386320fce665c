// The protocol-neutral request: what every protocol decoder produces and the prompt builder,
// the engine submission and the output pipeline consume. No wire names here (camelCase, decided
// defaults); each protocol maps its own fields onto this.
import type { LogitBias, SamplingParams } from '../engine/types.js';
import type { DecodedImage } from '../model/vision/types.js';

export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; /** JSON-encoded arguments object. */ arguments: string };
}

/**
 * Where an image comes from, as the protocol gave it: a URL (`data:` with base64, or `http(s):`,
 * fetched by the server) or base64 bytes with their declared media type (Anthropic's `base64`
 * source). src/server/images/ loads both the same way.
 */
export type ImageSource = { kind: 'url'; url: string } | { kind: 'base64'; mediaType: string; data: string };

export interface ChatTextPart {
  type: 'text';
  text: string;
}

export interface ChatImagePart {
  type: 'image';
  source: ImageSource;
  /** The request field it came from, as the protocol names it (`messages[0].content[1]`), for errors. */
  param: string;
  /** The decoded picture, once the route has loaded it (src/server/images/); absent before. */
  image?: DecodedImage;
}

export type ChatContentPart = ChatTextPart | ChatImagePart;

export interface ChatMessage {
  role: ChatRole;
  /**
   * Text content; null on an assistant message that only carries tool calls. On a message with
   * `parts`, its text parts joined (what text-only readers use: compaction, transcripts).
   */
  content: string | null;
  /**
   * The content in order, text and images, on a message that holds an image (user and tool
   * messages); absent otherwise. The chat template gets these parts (an image as HF's
   * `{type: 'image'}`), so a vision template writes its placeholder where the image was.
   */
  parts?: ChatContentPart[];
  /** Earlier reasoning of an assistant turn, when the client sends it back. */
  reasoning?: string;
  toolCalls?: ChatToolCall[];
  /** On tool messages: the id of the call answered. */
  toolCallId?: string;
  /** On tool messages: the tool's name. */
  name?: string;
}

/**
 * A message of text and image parts: `content` is the texts joined by `separator` (the protocol's
 * own: newlines for chat completions and Messages, nothing for Responses); `parts` is kept only
 * when there is an image among them.
 */
export function partsMessage(role: ChatRole, parts: ChatContentPart[], separator: string): ChatMessage {
  const content = parts
    .filter((p): p is ChatTextPart => p.type === 'text')
    .map((p) => p.text)
    .join(separator);
  return parts.some((p) => p.type === 'image') ? { role, content, parts } : { role, content };
}

/** Every image part of the messages, in prompt order (the order of the template's placeholders). */
export function imageParts(messages: readonly ChatMessage[]): ChatImagePart[] {
  return messages.flatMap((m) => (m.parts ?? []).filter((p): p is ChatImagePart => p.type === 'image'));
}

/** The message with `text` added before or after its text (to its parts too, where it has them). */
export function addText(m: ChatMessage, text: string, where: 'before' | 'after', separator: string): ChatMessage {
  const joined = (a: string | null, b: string | null): string => [a ?? '', b ?? ''].filter((t) => t !== '').join(separator);
  const out: ChatMessage = { ...m, content: where === 'before' ? joined(text, m.content) : joined(m.content, text) };
  if (m.parts) {
    const sep = m.content ? separator : '';
    const part: ChatTextPart = { type: 'text', text: where === 'before' ? `${text}${sep}` : `${sep}${text}` };
    out.parts = where === 'before' ? [part, ...m.parts] : [...m.parts, part];
  }
  return out;
}

/** The message with each text (its content, and each text part where it has parts) passed through `f`. */
export function mapText(m: ChatMessage, f: (text: string) => string): ChatMessage {
  const out: ChatMessage = { ...m, content: m.content === null ? null : f(m.content) };
  if (m.parts) out.parts = m.parts.map((p) => (p.type === 'text' ? { type: 'text', text: f(p.text) } : p));
  return out;
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
