// Prompt building: a ChatRequest → prompt token ids through the model's chat template, and a
// plain-completions prompt (text or token ids) → checked token ids.
//
// The work is bounded before it is done, and done off the HTTP event loop:
// - a text longer than maxSeqLen × the tokenizer's maxInputCharsPerToken can never fit the
//   context and is refused (400 context_length_exceeded) without tokenizing it;
// - tokenization stops early once the prompt is known to leave no room (Tokenizer encode's limit);
// - when the runtime has a prompt worker pool (a served model always does), rendering and encoding
//   run there (src/chat/prompt-workers.ts); runtimes built by hand in tests use the same functions
//   on the calling thread.
import { ApiError, contextLengthExceeded, invalidParam } from '../common/api-error.js';
import type { EngineImage } from '../engine/types.js';
import type { Tokenizer } from '../model/tokenizer.js';
import type { ModelRuntime } from './model-runtime.js';
import type { PromptInput, ChatContentPart, ChatMessage, ChatRequest } from './request.js';
import { ChatTemplateError, renderChatTemplate, TemplateTooDeepError, type ChatTemplateMessage } from './template.js';

/**
 * A message as chat templates read it: OpenAI names, and the reasoning under both names templates
 * read it by, Qwen's / DeepSeek's `reasoning_content` and GPT-OSS's `thinking` (its template renders
 * an assistant turn's analysis message from it).
 */
function templateMessage(m: ChatMessage): ChatTemplateMessage {
  // Templates know system, not OpenAI's newer developer role.
  const out: ChatTemplateMessage = {
    role: m.role === 'developer' ? 'system' : m.role,
    content: m.parts ? templateParts(m.parts) : m.content,
  };
  if (m.name !== undefined) out.name = m.name;
  if (m.toolCalls) out.tool_calls = m.toolCalls;
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  if (m.reasoning !== undefined) {
    out.reasoning_content = m.reasoning;
    out.thinking = m.reasoning;
  }
  return out;
}

/**
 * Parts in the shape HF chat templates iterate (`{type: 'text', text}`, `{type: 'image'}`): a
 * vision template writes its placeholder for each image (`<image>`,
 * `<|vision_start|><|image_pad|><|vision_end|>`). The pixels stay behind: only the parts are posted
 * to a prompt worker.
 */
function templateParts(parts: ChatContentPart[]): unknown[] {
  return parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image' }));
}

export interface ChatPrompt {
  tokens: number[];
  /** The rendered template text (the output plan looks at how it ends). */
  text: string;
  /** Vision models: the prompt's images and their tokens' places (image-prompt.ts); absent without images. */
  images?: EngineImage[];
}

/** What the chat template renders (plain data: it is posted to a prompt worker). */
export interface ChatTemplateInput {
  messages: ChatTemplateMessage[];
  tools: unknown[];
  chatTemplateKwargs?: Record<string, unknown>;
  /** End with the assistant turn's opening (default true; POST /tokenize may turn it off). */
  addGenerationPrompt?: boolean;
}

/** What prompt building needs from the model (the same on the main thread and in a prompt worker). */
export interface PromptModel {
  tokenizer: Tokenizer;
  chatTemplate: string | null;
  maxSeqLen: number;
}

/**
 * 400 context_length_exceeded for a prompt that leaves no room for a completion. `tokens` is its
 * length, or a lower bound when `atLeast` (tokenization stopped early), or null when it was refused
 * by its length in characters before tokenizing.
 */
export function promptTooLong(maxSeqLen: number, tokens: number | null, param: string, atLeast = false): ApiError {
  const size = tokens === null ? 'longer than any text that fits in it' : `${atLeast ? 'at least ' : ''}${tokens} tokens`;
  return contextLengthExceeded(
    `This model's maximum context length is ${maxSeqLen} tokens. However, your prompt is ${size}, ` +
      'which leaves no room for a completion. Please reduce the length of the prompt.',
    param,
  );
}

/** The most characters a text can have and still fit the context (Infinity: no bound, see input-bounds.ts). */
export function maxPromptChars(model: PromptModel): number {
  return model.maxSeqLen * model.tokenizer.maxInputCharsPerToken;
}

/** Tokens of a text, refused unless it leaves room in the context (by length first, then while encoding). */
function encodeBounded(model: PromptModel, text: string, param: string, addSpecialTokens: boolean): number[] {
  if (text.length > maxPromptChars(model)) throw promptTooLong(model.maxSeqLen, null, param);
  const limit = model.maxSeqLen - 1;
  const tokens = model.tokenizer.encode(text, { addSpecialTokens, limit });
  if (tokens.length > limit) throw promptTooLong(model.maxSeqLen, tokens.length, param, true);
  return tokens;
}

/** The chat template rendered for `input`, ending with the assistant turn's opening (unless addGenerationPrompt is false). */
export function renderChatText(model: PromptModel, input: ChatTemplateInput): string {
  const { tokenizer, chatTemplate } = model;
  if (chatTemplate === null) {
    throw new ApiError(400, 'This model has no chat template; send a raw prompt to /v1/completions instead.', {
      code: 'no_chat_template',
      param: 'messages',
    });
  }
  try {
    return renderChatTemplate(chatTemplate, {
      messages: input.messages,
      tools: input.tools,
      addGenerationPrompt: input.addGenerationPrompt ?? true,
      bosToken: tokenizer.bosToken,
      eosToken: tokenizer.eosToken,
      extra: input.chatTemplateKwargs,
    });
  } catch (err) {
    // raise_exception() in a template is the model saying the conversation is not one it takes.
    if (err instanceof TemplateTooDeepError) throw new ApiError(400, err.message, { code: 'too_deep', param: 'messages' });
    if (err instanceof ChatTemplateError && err.raisedByTemplate) {
      throw invalidParam('messages', `The model's chat template refused the conversation: ${err.message}`);
    }
    throw err;
  }
}

/**
 * The chat prompt of a rendered text. The character bound is checked on the rendered text, not on
 * the request's fields: a template may drop fields (earlier turns' reasoning, unused tools), so only
 * the rendered text is provably the tokenizer's input, and rendering is cheap (linear: 16 MiB of
 * content renders in ~20 ms) next to encoding.
 */
export function chatPromptFromText(model: PromptModel, text: string): ChatPrompt {
  // The template writes BOS itself where the model wants one.
  const tokens = encodeBounded(model, text, 'messages', false);
  if (tokens.length === 0) throw invalidParam('messages', 'The rendered prompt is empty.');
  return { tokens, text };
}

/** Renders and encodes a chat prompt on the calling thread. */
export function renderChatPrompt(model: PromptModel, input: ChatTemplateInput): ChatPrompt {
  return chatPromptFromText(model, renderChatText(model, input));
}

/** Encodes a plain-completions text prompt as the model's tokenizer does for raw text (BOS …). */
export function encodeTextPrompt(model: PromptModel, text: string, param: string): number[] {
  const tokens = encodeBounded(model, text, param, true);
  if (tokens.length === 0) throw invalidParam(param, `'${param}' is empty.`);
  return tokens;
}

/** What the chat template renders for a request. */
export function chatTemplateInput(req: ChatRequest): ChatTemplateInput {
  return { messages: req.messages.map(templateMessage), tools: req.tools, chatTemplateKwargs: req.chatTemplateKwargs };
}

/**
 * The chat prompt: the rendered template, ending with the assistant turn's opening, as token ids.
 * A vision model's image placeholders are expanded after (image-prompt.ts: withImageTokens).
 */
export async function buildChatPrompt(req: ChatRequest, runtime: ModelRuntime): Promise<ChatPrompt> {
  const input = chatTemplateInput(req);
  return runtime.prompts ? runtime.prompts.chat(input) : renderChatPrompt(runtime, input);
}

/**
 * The chat prompt of `input` when it has fewer than `limit` tokens (which may exceed the context),
 * else null; other errors are thrown as buildChatPrompt throws them. Auto-compaction measures the
 * request and its candidate compactions this way (src/chat/auto-compact.ts).
 */
export async function measureChatPrompt(input: ChatTemplateInput, runtime: ModelRuntime, limit: number): Promise<ChatPrompt | null> {
  try {
    if (runtime.prompts) return await runtime.prompts.chat(input, limit);
    return renderChatPrompt({ tokenizer: runtime.tokenizer, chatTemplate: runtime.chatTemplate, maxSeqLen: limit }, input);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'context_length_exceeded') return null;
    throw err;
  }
}

export interface TextPrompt {
  tokens: number[];
  /** The prompt as text (what `echo` returns). */
  text: string;
}

/** A plain-completions prompt: text is tokenized as the model's tokenizer does for raw text (BOS …). */
export async function buildTextPrompt(input: PromptInput, runtime: ModelRuntime, param: string): Promise<TextPrompt> {
  if ('text' in input) {
    // The text is the tokenizer's input: its length is checked here, before it is posted anywhere.
    if (input.text.length > maxPromptChars(runtime)) throw promptTooLong(runtime.maxSeqLen, null, param);
    const tokens = runtime.prompts ? await runtime.prompts.text(input.text, param) : encodeTextPrompt(runtime, input.text, param);
    return { tokens, text: input.text };
  }
  if (input.tokens.length === 0) throw invalidParam(param, `'${param}' is empty.`);
  // Counted before anything is decoded.
  if (input.tokens.length >= runtime.maxSeqLen) throw promptTooLong(runtime.maxSeqLen, input.tokens.length, param);
  const vocab = runtime.modelConfig.vocabSize;
  const bad = input.tokens.find((id) => id >= vocab);
  if (bad !== undefined) throw invalidParam(param, `Token id ${bad} in '${param}' is out of range: the vocabulary has ${vocab} tokens.`);
  const text = runtime.prompts ? await runtime.prompts.detokenize(input.tokens) : runtime.tokenizer.decode(input.tokens);
  return { tokens: input.tokens, text };
}
