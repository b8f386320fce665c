// OpenAI chat-completions: the wire request → ChatRequest, and OutputEvents → the response body
// or stream chunks. The JSON schema (types, ranges) is checked by the route before this runs;
// here are the checks that need more than one field, and the OpenAI/vLLM defaults.
import { randomUUID } from 'node:crypto';
import type { LogitBias, SamplingParams, TokenLogprob } from '../../engine/types.js';
import type { FinishReason, OutputEvent } from '../../chat/events.js';
import type { ModelSamplingDefaults } from '../../chat/model-runtime.js';
import {
  partsMessage,
  type ChatContentPart,
  type ChatMessage,
  type ChatRequest,
  type ChatRole,
  type ChatToolCall,
  type GenerationOptions,
  type ToolChoice,
  type ToolDefinition,
} from '../../chat/request.js';
import { invalidParam, type ApiError } from '../../common/api-error.js';
import { applyReasoningEffort, type ReasoningEffort } from '../../chat/reasoning-effort.js';
import { checkJsonLimit, SCHEMA_LIMIT, TEMPLATE_KWARGS_LIMIT } from '../json-limits.js';
import { decodeOutputFormat, type WireStructuredFields } from './structured.js';
import type { SseFrame, StreamEncoder, TokenUsage } from '../stream.js';
import { closingFrames, dataFrames, errorFrames } from './stream.js';

// ---------------------------------------------------------------------------------------------
// Wire request

export interface WireContentPart {
  type: string;
  text?: string;
  /** `detail` is accepted and ignored (the model's own preprocessing decides the resolution). */
  image_url?: { url: string; detail?: string };
}

export interface WireMessage {
  /** `function`: a legacy function result (read as a tool message). */
  role: ChatRole | 'function';
  content?: string | WireContentPart[] | null;
  name?: string;
  tool_calls?: ChatToolCall[] | null;
  tool_call_id?: string;
  /** Legacy: the call an assistant message made with `functions`. */
  function_call?: { name: string; arguments: string } | null;
  reasoning?: string | null;
  reasoning_content?: string | null;
}

/** Fields every OpenAI-family generation request shares (chat and legacy completions). */
export interface WireGenerationFields {
  model?: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  top_n_sigma?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  n?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  /** Token id (a decimal string) → bias in [-100, 100]. */
  logit_bias?: Record<string, number> | null;
  repetition_penalty?: number | null;
  min_tokens?: number | null;
  bad_words?: string[] | null;
  ignore_eos?: boolean | null;
  stop_token_ids?: number[] | null;
  skip_special_tokens?: boolean | null;
}

export interface WireFunction {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export interface ChatCompletionBody extends WireGenerationFields, WireStructuredFields {
  messages: WireMessage[];
  max_completion_tokens?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  tools?: ToolDefinition[] | null;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
  /** Legacy tools: mapped onto `tools` / `tool_choice`. */
  functions?: WireFunction[] | null;
  function_call?: 'none' | 'auto' | { name: string } | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  reasoning_effort?: ReasoningEffort | null;
  /** vLLM: false keeps the reasoning out of the response. */
  include_reasoning?: boolean | null;
}

/** Server-side defaults the request falls back to (from the CLI). */
export interface SamplingDefaults {
  defaultMinP: number;
  defaultTopNSigma: number;
  /** The model's own defaults (MODEL.toml [sampling], else generation_config.json), used when a request omits a field. */
  model?: ModelSamplingDefaults;
  /** --disable-thinking: render every chat with enable_thinking false. */
  disableThinking?: boolean;
  /** The tokenizer's vocabulary size: logit_bias ids at or past it are refused (unchecked when left out). */
  vocabSize?: number;
}

// ---------------------------------------------------------------------------------------------
// Decoding

/**
 * The OpenAI-family fields → neutral options; `logprobs` and `maxTokens` are set by the caller.
 * `maxTokens`: the completion length the request asks for (chat's max_completion_tokens wins over
 * max_tokens), which min_tokens may not exceed; default the body's max_tokens.
 */
export function decodeGenerationFields(
  body: WireGenerationFields,
  defaults: SamplingDefaults,
  maxTokens: number | null = body.max_tokens ?? null,
): Omit<GenerationOptions, 'logprobs' | 'maxTokens'> {
  if (body.min_tokens != null && maxTokens !== null && body.min_tokens > maxTokens) {
    throw invalidParam('min_tokens', `'min_tokens' (${body.min_tokens}) must be at most the maximum number of tokens (${maxTokens}).`);
  }
  if (body.stream_options != null && body.stream !== true) {
    throw invalidParam('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  }
  const model = defaults.model ?? {};
  const topK = body.top_k ?? model.top_k ?? 0;
  const sampling: SamplingParams = {
    temperature: body.temperature ?? model.temperature ?? 1.0,
    // vLLM spells "off" as -1; the engine as 0.
    topK: topK < 0 ? 0 : topK,
    topP: body.top_p ?? model.top_p ?? 1.0,
    minP: body.min_p ?? model.min_p ?? defaults.defaultMinP,
    topNSigma: body.top_n_sigma ?? defaults.defaultTopNSigma,
    seed: body.seed ?? null,
  };
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const stream = body.stream ?? false;
  return {
    sampling,
    stop,
    stopTokenIds: body.stop_token_ids ?? [],
    ignoreEos: body.ignore_eos ?? false,
    n: body.n ?? 1,
    skipSpecialTokens: body.skip_special_tokens ?? true,
    stream,
    includeUsage: stream && (body.stream_options?.include_usage ?? false),
    logitBias: decodeLogitBias(body.logit_bias ?? null, defaults.vocabSize),
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
    repetitionPenalty: body.repetition_penalty ?? 1,
    minTokens: body.min_tokens ?? 0,
    badWords: body.bad_words ?? [],
  };
}

/**
 * logit_bias's keys → token ids (the schema checked the values). A key must be a token id written
 * as a non-negative decimal integer, inside the vocabulary; "5" and "05" are the same id, the last
 * written wins (as a dict keyed by int in vLLM).
 */
function decodeLogitBias(bias: Record<string, number> | null, vocabSize: number | undefined): LogitBias | null {
  if (bias === null) return null;
  const byId = new Map<number, number>();
  for (const [key, value] of Object.entries(bias)) {
    const id = /^[0-9]+$/.test(key) ? Number(key) : NaN;
    if (!Number.isSafeInteger(id)) {
      throw invalidParam('logit_bias', `Invalid key in 'logit_bias': '${key}'. Keys must be token ids (non-negative integers).`);
    }
    if (vocabSize !== undefined && id >= vocabSize) {
      throw invalidParam(
        'logit_bias',
        `Invalid key in 'logit_bias': token id ${id} is out of range: the vocabulary has ${vocabSize} tokens.`,
      );
    }
    byId.set(id, value);
  }
  return byId.size === 0 ? null : { ids: [...byId.keys()], biases: [...byId.values()] };
}

export function decodeChatRequest(body: ChatCompletionBody, defaults: SamplingDefaults): ChatRequest {
  if (body.logprobs !== true && body.top_logprobs != null && body.top_logprobs > 0) {
    throw invalidParam('top_logprobs', "'top_logprobs' requires 'logprobs' to be true.");
  }
  const legacy = body.functions != null || body.function_call != null;
  if (legacy && (body.tools != null || body.tool_choice != null)) {
    throw invalidParam('functions', "'functions' / 'function_call' (deprecated) cannot be combined with 'tools' / 'tool_choice'.");
  }
  const tools = legacy ? legacyTools(body.functions ?? []) : (body.tools ?? []);
  // Free-form JSON that reaches the template and the grammar compiler: bounded before either runs.
  tools.forEach((t, i) => {
    if (t.function.parameters !== undefined) {
      checkJsonLimit(t.function.parameters, legacy ? `functions[${i}].parameters` : `tools[${i}].function.parameters`, SCHEMA_LIMIT);
    }
  });
  if (body.chat_template_kwargs != null) checkJsonLimit(body.chat_template_kwargs, 'chat_template_kwargs', TEMPLATE_KWARGS_LIMIT);
  const toolChoice = legacy ? decodeFunctionCall(body.function_call ?? null, tools) : decodeToolChoice(body.tool_choice ?? null, tools);
  const chatTemplateKwargs: Record<string, unknown> = { ...(body.chat_template_kwargs ?? {}) };
  const thinkingBudget = body.reasoning_effort != null ? applyReasoningEffort(body.reasoning_effort, chatTemplateKwargs) : null;
  if (defaults.disableThinking) chatTemplateKwargs.enable_thinking = false;
  return {
    ...decodeGenerationFields(body, defaults, body.max_completion_tokens ?? body.max_tokens ?? null),
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    logprobs: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
    messages: decodeMessages(body.messages),
    tools: toolChoice === 'none' ? [] : tools,
    toolChoice,
    // Legacy functions come back as one `function_call`.
    parallelToolCalls: legacy ? false : (body.parallel_tool_calls ?? true),
    chatTemplateKwargs,
    thinkingBudget,
    outputFormat: decodeOutputFormat(body),
    ...(body.include_reasoning === false ? { includeReasoning: false } : {}),
    ...(legacy ? { legacyFunctions: true } : {}),
  };
}

function legacyTools(functions: WireFunction[]): ToolDefinition[] {
  return functions.map((f) => ({
    type: 'function',
    function: {
      name: f.name,
      ...(f.description !== undefined ? { description: f.description } : {}),
      ...(f.parameters !== undefined ? { parameters: f.parameters } : {}),
    },
  }));
}

function decodeFunctionCall(call: ChatCompletionBody['function_call'], tools: ToolDefinition[]): ToolChoice {
  if (call == null || call === 'auto') return tools.length > 0 ? 'auto' : 'none';
  if (call === 'none') return 'none';
  if (!tools.some((t) => t.function.name === call.name)) {
    throw invalidParam('function_call', `'function_call' names the function '${call.name}', which is not in 'functions'.`);
  }
  return { type: 'function', function: { name: call.name } };
}

function decodeToolChoice(choice: ToolChoice | null, tools: ToolDefinition[]): ToolChoice {
  if (choice === null) return tools.length > 0 ? 'auto' : 'none';
  if (choice === 'none' || choice === 'auto') return tools.length > 0 ? choice : 'none';
  if (tools.length === 0) {
    throw invalidParam('tool_choice', "'tool_choice' other than 'none' or 'auto' requires 'tools'.");
  }
  if (typeof choice === 'object') {
    const name = choice.function.name;
    if (!tools.some((t) => t.function.name === name)) {
      throw invalidParam('tool_choice', `'tool_choice' names the function '${name}', which is not in 'tools'.`);
    }
  }
  return choice;
}

/** Messages, with the legacy forms mapped: an assistant `function_call` becomes a tool call, a `function` message its result. */
function decodeMessages(wire: WireMessage[]): ChatMessage[] {
  let lastCallId: string | null = null;
  return wire.map((m, i) => {
    if (m.role === 'assistant' && m.function_call != null) {
      lastCallId = `call_legacy_${i}`;
      return decodeMessage({ ...m, tool_calls: [{ id: lastCallId, type: 'function', function: m.function_call }] }, i);
    }
    if (m.role === 'function') {
      if (m.name === undefined) throw invalidParam(`messages[${i}].name`, `Missing required parameter: 'messages[${i}].name'.`);
      return decodeMessage({ ...m, role: 'tool', tool_call_id: lastCallId ?? `call_legacy_${i}` }, i);
    }
    return decodeMessage(m, i);
  });
}

function decodeMessage(m: WireMessage, i: number): ChatMessage {
  const at = `messages[${i}]`;
  const role = m.role as ChatRole;
  const out = decodeContent(role, m.content ?? null, `${at}.content`);
  const content = out.content;
  if (m.name !== undefined) out.name = m.name;
  switch (m.role) {
    case 'assistant': {
      const calls = m.tool_calls ?? [];
      if (content === null && calls.length === 0) {
        throw invalidParam(`${at}.content`, `'${at}.content' is required unless the message has 'tool_calls'.`);
      }
      // `type` may be left out by clients; it can only be 'function'.
      if (calls.length > 0) out.toolCalls = calls.map((c) => ({ id: c.id, type: 'function', function: c.function }));
      const reasoning = m.reasoning ?? m.reasoning_content;
      if (reasoning != null) out.reasoning = reasoning;
      break;
    }
    case 'tool':
      if (m.tool_call_id === undefined) {
        throw invalidParam(`${at}.tool_call_id`, `Missing required parameter: '${at}.tool_call_id'.`);
      }
      out.toolCallId = m.tool_call_id;
      out.content = content ?? '';
      break;
    default:
      if (content === null) throw invalidParam(`${at}.content`, `Missing required parameter: '${at}.content'.`);
  }
  return out;
}

/** A message's content: a string, or text and image parts (images in user messages only). */
function decodeContent(role: ChatRole, content: string | WireContentPart[] | null, param: string): ChatMessage {
  if (content === null || typeof content === 'string') return { role, content };
  if (content.length === 0) throw invalidParam(param, `'${param}' must not be an empty array: send a string or at least one content part.`);
  const parts = content.map((part, j): ChatContentPart => {
    const at = `${param}[${j}]`;
    if (part.type === 'text') {
      if (typeof part.text === 'string') return { type: 'text', text: part.text };
      throw invalidParam(`${at}.text`, `Missing required parameter: '${at}.text' (a content part of type 'text' needs its text).`);
    }
    if (part.type === 'image_url') {
      if (role !== 'user')
        throw invalidParam(`${at}.type`, `Image content parts are accepted in user messages only ('${at}' is in a ${role} message).`);
      if (part.image_url === undefined) {
        throw invalidParam(
          `${at}.image_url`,
          `Missing required parameter: '${at}.image_url' (a content part of type 'image_url' needs its url).`,
        );
      }
      return { type: 'image', source: { kind: 'url', url: part.image_url.url }, param: at };
    }
    throw invalidParam(`${at}.type`, `Invalid content part type '${part.type}' in '${at}'.`);
  });
  // vLLM joins text parts with newlines.
  return partsMessage(role, parts, '\n');
}

// ---------------------------------------------------------------------------------------------
// Encoding

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usage(u: TokenUsage): Usage {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
  };
}

/** A token's raw bytes: what it adds to the UTF-8 output, possibly part of a character (Tokenizer.tokenBytes). */
export type TokenBytes = (id: number) => Uint8Array;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A token's bytes as the `token` string of a logprob record: the text, where the bytes are whole
 * UTF-8 characters; otherwise each byte that is not part of a complete character is written as
 * `\xNN` (lowercase hex), as OpenAI's chat API writes a token holding part of a character
 * (Python's `bytes.decode('utf-8', 'backslashreplace')`). The `bytes` field carries the raw bytes.
 */
export function tokenString(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    let out = '';
    let i = 0;
    while (i < bytes.length) {
      const n = utf8SequenceLength(bytes, i);
      if (n > 0) {
        out += strictUtf8.decode(bytes.subarray(i, i + n));
        i += n;
      } else {
        out += `\\x${bytes[i].toString(16).padStart(2, '0')}`;
        i++;
      }
    }
    return out;
  }
}

/** Length of the well-formed UTF-8 character at bytes[i], or 0 when none starts there. */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const b = bytes[i];
  if (b < 0x80) return 1;
  let n: number;
  let lo = 0x80;
  let hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) n = 2;
  else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b === 0xe0) lo = 0xa0;
    if (b === 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b === 0xf0) lo = 0x90;
    if (b === 0xf4) hi = 0x8f;
  } else return 0;
  if (i + n > bytes.length) return 0;
  for (let k = 1; k < n; k++) {
    const c = bytes[i + k];
    if (c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return 0;
  }
  return n;
}

interface WireTopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}
interface WireLogprob extends WireTopLogprob {
  top_logprobs: WireTopLogprob[];
}

/** Chat logprob records: `bytes` are the token's raw bytes, so a choice's records concatenate to its UTF-8 output. */
function logprobRecords(lps: TokenLogprob[], topN: number, tokenBytes: TokenBytes): WireLogprob[] {
  const rec = (id: number, logprob: number): WireTopLogprob => {
    const bytes = tokenBytes(id);
    return { token: tokenString(bytes), logprob, bytes: Array.from(bytes) };
  };
  return lps.map((lp) => ({ ...rec(lp.id, lp.logprob), top_logprobs: lp.top.slice(0, topN).map((t) => rec(t.id, t.logprob)) }));
}

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Response identity shared by all chunks of one response. */
export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
}

export function newResponseMeta(prefix: string, model: string): ResponseMeta {
  return { id: `${prefix}-${randomUUID().replace(/-/g, '')}`, created: Math.floor(Date.now() / 1000), model };
}

/** Collects one choice's events into a non-streamed chat message. */
class ChoiceAccumulator {
  content = '';
  reasoning = '';
  toolCalls: WireToolCall[] = [];
  logprobs: WireLogprob[] = [];
  finish: FinishReason | null = null;

  add(events: OutputEvent[]): void {
    for (const e of events) {
      switch (e.type) {
        case 'text':
          this.content += e.text;
          break;
        case 'reasoning':
          this.reasoning += e.text;
          break;
        case 'tool_call_start':
          this.toolCalls[e.index] = { id: e.id, type: 'function', function: { name: e.name, arguments: '' } };
          break;
        case 'tool_call_args': {
          const call = this.toolCalls[e.index];
          if (call) call.function.arguments += e.fragment;
          break;
        }
        case 'finish':
          this.finish = e.reason;
      }
    }
  }
}

type WireFinishReason = FinishReason | 'function_call';

/** A legacy-functions request ends a call with `function_call`, as OpenAI did. */
function wireFinish(reason: FinishReason, legacyFunctions: boolean): WireFinishReason {
  return legacyFunctions && reason === 'tool_calls' ? 'function_call' : reason;
}

/** Builds the non-streamed `chat.completion` body. */
export class ChatCompletionBuilder {
  private readonly choices: ChoiceAccumulator[];

  constructor(
    private readonly meta: ResponseMeta,
    n: number,
    private readonly logprobs: number | null,
    private readonly tokenBytes: TokenBytes,
    /** The request used legacy `functions`: the call is `message.function_call`. */
    private readonly legacyFunctions = false,
  ) {
    this.choices = Array.from({ length: n }, () => new ChoiceAccumulator());
  }

  add(index: number, events: OutputEvent[], lps: TokenLogprob[]): void {
    const c = this.choices[index]!;
    c.add(events);
    if (this.logprobs !== null) c.logprobs.push(...logprobRecords(lps, this.logprobs, this.tokenBytes));
  }

  build(counts: TokenUsage): unknown {
    return {
      id: this.meta.id,
      object: 'chat.completion',
      created: this.meta.created,
      model: this.meta.model,
      choices: this.choices.map((c, index) => {
        const calls = c.toolCalls.filter(Boolean);
        const message: Record<string, unknown> = {
          role: 'assistant',
          content: c.content === '' && calls.length > 0 ? null : c.content,
        };
        if (c.reasoning !== '') message.reasoning = c.reasoning;
        if (calls.length > 0 && this.legacyFunctions) message.function_call = calls[0]!.function;
        else if (calls.length > 0) message.tool_calls = calls;
        return {
          index,
          message,
          logprobs: this.logprobs === null ? null : { content: c.logprobs },
          finish_reason: wireFinish(c.finish ?? 'stop', this.legacyFunctions),
        };
      }),
      usage: usage(counts),
    };
  }
}

/** Turns OutputEvents into `chat.completion.chunk` frames, one stream for all n choices. */
export class ChatChunkEncoder implements StreamEncoder {
  /** Logprobs of tokens whose text is still held back, per choice: sent with the next chunk. */
  private readonly pending: WireLogprob[][];

  constructor(
    private readonly meta: ResponseMeta,
    private readonly n: number,
    private readonly logprobs: number | null,
    private readonly includeUsage: boolean,
    private readonly tokenBytes: TokenBytes,
    /** The request used legacy `functions`: deltas carry `function_call`. */
    private readonly legacyFunctions = false,
  ) {
    this.pending = Array.from({ length: n }, () => []);
  }

  /** The opening chunk of each choice: the role, and empty content as OpenAI sends it. */
  start(): SseFrame[] {
    return dataFrames(Array.from({ length: this.n }, (_, index) => this.chunk(index, { role: 'assistant', content: '' }, null)));
  }

  /** Chunks for one step of one choice; a 'finish' event gives the closing chunk with an empty delta. */
  step(index: number, events: OutputEvent[], lps: TokenLogprob[]): SseFrame[] {
    if (this.logprobs !== null) this.pending[index]!.push(...logprobRecords(lps, this.logprobs, this.tokenBytes));
    const out: unknown[] = [];
    let text = '';
    let reasoning = '';
    const flush = (): void => {
      if (reasoning !== '') out.push(this.chunk(index, { reasoning }, null));
      if (text !== '') out.push(this.chunk(index, { content: text }, null));
      text = reasoning = '';
    };
    for (const e of events) {
      switch (e.type) {
        case 'text':
          if (reasoning !== '') flush();
          text += e.text;
          break;
        case 'reasoning':
          if (text !== '') flush();
          reasoning += e.text;
          break;
        case 'tool_call_start':
          flush();
          out.push(
            this.chunk(
              index,
              this.legacyFunctions
                ? { function_call: { name: e.name, arguments: '' } }
                : { tool_calls: [{ index: e.index, id: e.id, type: 'function', function: { name: e.name, arguments: '' } }] },
              null,
            ),
          );
          break;
        case 'tool_call_args':
          flush();
          out.push(
            this.chunk(
              index,
              this.legacyFunctions
                ? { function_call: { arguments: e.fragment } }
                : { tool_calls: [{ index: e.index, function: { arguments: e.fragment } }] },
              null,
            ),
          );
          break;
        case 'finish':
          flush();
          // An error is reported as an error frame (error() below), not as a finish reason.
          if (e.reason !== 'error') out.push(this.chunk(index, {}, wireFinish(e.reason, this.legacyFunctions)));
      }
    }
    flush();
    return dataFrames(out);
  }

  /** The usage chunk (choices: [] as OpenAI sends it) when asked for, then [DONE]. */
  finish(counts: TokenUsage | null): SseFrame[] {
    const last = this.includeUsage && counts !== null;
    return closingFrames(last ? { ...this.header(), choices: [], usage: usage(counts) } : null);
  }

  error(err: ApiError): SseFrame[] {
    return errorFrames(err);
  }

  private header(): Record<string, unknown> {
    return { id: this.meta.id, object: 'chat.completion.chunk', created: this.meta.created, model: this.meta.model };
  }

  private chunk(index: number, delta: Record<string, unknown>, finish: WireFinishReason | null): unknown {
    let logprobs: { content: WireLogprob[] } | null = null;
    if (this.logprobs !== null && (this.pending[index]!.length > 0 || finish !== null)) {
      logprobs = { content: this.pending[index]! };
      this.pending[index] = [];
    }
    const chunk: Record<string, unknown> = {
      ...this.header(),
      choices: [{ index, delta, logprobs, finish_reason: finish }],
    };
    // OpenAI: with include_usage every other chunk carries usage: null.
    if (this.includeUsage) chunk.usage = null;
    return chunk;
  }
}
