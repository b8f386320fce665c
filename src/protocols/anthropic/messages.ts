// Anthropic Messages: the wire request → ChatRequest, and OutputEvents → the `message` body. The
// JSON schema (types, ranges) is checked by the route before this runs; here are the checks that
// need more than one field. The stream encoder is in stream.ts.
import { createHash, randomBytes } from 'node:crypto';
import type { FinishReason, OutputEvent } from '../../chat/events.js';
import type { ModelSamplingDefaults } from '../../chat/model-runtime.js';
import {
  partsMessage,
  type ChatContentPart,
  type ChatImagePart,
  type ChatMessage,
  type ChatRequest,
  type ChatToolCall,
  type OutputFormat,
  type ToolChoice,
  type ToolDefinition,
} from '../../chat/request.js';
import { applyReasoningEffort } from '../../chat/reasoning-effort.js';
import { invalidParam, unsupportedParam } from '../../common/api-error.js';
import { requestSchema } from '../json-limits.js';
import type { TokenUsage } from '../stream.js';

// ---------------------------------------------------------------------------------------------
// Wire request

export interface WireTextBlock {
  type: 'text';
  text: string;
  cache_control?: unknown;
}

/** A content block as clients send it; which fields apply depends on `type`. */
export interface WireContentBlock {
  type: string;
  text?: string;
  // tool_use
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
  // tool_result
  tool_use_id?: string;
  content?: string | WireContentBlock[];
  is_error?: boolean;
  // thinking / redacted_thinking
  thinking?: string;
  signature?: string;
  data?: string;
  // image
  source?: WireImageSource;
}

/** An image block's source: base64 bytes with their media type, or a URL the server fetches (a `file` source is refused). */
export interface WireImageSource {
  type: string;
  media_type?: string;
  data?: string;
  url?: string;
}

export interface WireMessage {
  role: 'user' | 'assistant';
  content: string | WireContentBlock[];
}

/** A client tool (`input_schema`), or a server tool (`type` such as web_search_20250305), which svc skips. */
export interface WireTool {
  type?: string;
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
}

export type WireToolChoice =
  | { type: 'auto' | 'any' | 'none'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean };

/** `adaptive` and `between_tools` (newer Claude models) think with the model's own budget; `display` is ignored. */
export type WireThinking =
  | { type: 'enabled'; budget_tokens: number; display?: string | null }
  | { type: 'adaptive' | 'between_tools'; display?: string | null }
  | { type: 'disabled' };

export interface MessagesBody {
  model?: string;
  max_tokens: number;
  system?: string | WireTextBlock[];
  messages: WireMessage[];
  tools?: WireTool[];
  tool_choice?: WireToolChoice;
  thinking?: WireThinking;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  metadata?: Record<string, unknown>;
  output_config?: { format?: WireOutputFormat | null; effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null } | null;
  /** The structured-outputs beta's spelling of output_config.format. */
  output_format?: WireOutputFormat | null;
}

export interface WireOutputFormat {
  type: 'json_schema';
  schema: Record<string, unknown>;
}

/** count_tokens takes the same body without max_tokens. */
export type CountTokensBody = Omit<MessagesBody, 'max_tokens'> & { max_tokens?: number };

/** Server-side defaults the request falls back to. */
export interface MessagesDefaults {
  defaultMinP: number;
  defaultTopNSigma: number;
  /** The model's own sampling defaults (MODEL.toml [sampling], else generation_config.json). */
  model?: ModelSamplingDefaults;
  /** --disable-thinking: every chat is rendered with enable_thinking false. */
  disableThinking?: boolean;
}

/** The decoded request and what was dropped on the way (server tools), for the route to log. */
export interface DecodedMessages {
  chat: ChatRequest;
  warnings: string[];
}

// ---------------------------------------------------------------------------------------------
// Decoding

/** The line Claude Code puts into its first system block; it changes every request. */
const BILLING_HEADER = /^x-anthropic-billing-header:.*(?:\r?\n|$)/gim;

export function decodeMessagesRequest(body: CountTokensBody, defaults: MessagesDefaults): DecodedMessages {
  const warnings: string[] = [];
  const tools: ToolDefinition[] = [];
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (t.type !== undefined && t.type !== 'custom') {
      warnings.push(`tools[${i}]: server tool '${t.name}' (${t.type}) is not supported and was skipped`);
      continue;
    }
    if (t.input_schema === undefined) throw invalidParam(`tools.${i}.input_schema`, `tools.${i}.input_schema: Field required`);
    const fn: ToolDefinition['function'] = { name: t.name, parameters: t.input_schema };
    if (t.description !== undefined) fn.description = t.description;
    tools.push({ type: 'function', function: fn });
  }
  const { toolChoice, parallel } = decodeToolChoice(body.tool_choice, tools);

  const messages: ChatMessage[] = [];
  const system = decodeSystem(body.system);
  if (system !== null) messages.push({ role: 'system', content: system });
  const toolNames = new Map<string, string>();
  body.messages.forEach((m, i) => messages.push(...decodeMessage(m, `messages.${i}`, toolNames)));

  const chatTemplateKwargs: Record<string, unknown> = {};
  let thinkingBudget: number | null = null;
  const thinking = body.thinking;
  if (thinking !== undefined) chatTemplateKwargs.enable_thinking = thinking.type !== 'disabled';
  if (thinking?.type === 'enabled') thinkingBudget = thinking.budget_tokens;
  const effort = body.output_config?.effort;
  if (effort != null) {
    const budget = applyReasoningEffort(effort, chatTemplateKwargs);
    if (budget !== null) thinkingBudget = thinkingBudget === null ? budget : Math.min(thinkingBudget, budget);
  }
  if (defaults.disableThinking) chatTemplateKwargs.enable_thinking = false;

  const model = defaults.model ?? {};
  const chat: ChatRequest = {
    sampling: {
      temperature: body.temperature ?? model.temperature ?? 1.0,
      topK: body.top_k ?? model.top_k ?? 0,
      topP: body.top_p ?? model.top_p ?? 1.0,
      minP: model.min_p ?? defaults.defaultMinP,
      topNSigma: defaults.defaultTopNSigma,
      seed: null,
    },
    maxTokens: body.max_tokens ?? null,
    stop: body.stop_sequences ?? [],
    stopTokenIds: [],
    ignoreEos: false,
    n: 1,
    logprobs: null,
    skipSpecialTokens: true,
    stream: body.stream ?? false,
    includeUsage: false,
    messages,
    tools: toolChoice === 'none' ? [] : tools,
    toolChoice,
    parallelToolCalls: parallel,
    chatTemplateKwargs,
    thinkingBudget,
    outputFormat: decodeOutputFormat(body),
  };
  return { chat, warnings };
}

/** `output_config.format` (or the beta's `output_format`): the text answer is JSON valid for the schema. */
function decodeOutputFormat(body: CountTokensBody): OutputFormat | null {
  const configured = body.output_config?.format ?? null;
  if (configured !== null && body.output_format != null) {
    throw invalidParam('output_format', "'output_format' and 'output_config.format' cannot both be given.");
  }
  const param = configured !== null ? 'output_config.format.schema' : 'output_format.schema';
  const format = configured ?? body.output_format ?? null;
  if (format === null) return null;
  return { type: 'json_schema', schema: requestSchema(format.schema, param), param };
}

/** The system prompt as one text, without Claude Code's per-request billing line (it would defeat prefix caching). */
function decodeSystem(system: string | WireTextBlock[] | undefined): string | null {
  if (system === undefined) return null;
  const blocks = typeof system === 'string' ? [system] : system.map((b) => b.text);
  if (blocks.length > 0) blocks[0] = blocks[0]!.replace(BILLING_HEADER, '');
  const texts = blocks.filter((t) => t !== '');
  return texts.length === 0 ? null : texts.join('\n');
}

function decodeToolChoice(choice: WireToolChoice | undefined, tools: ToolDefinition[]): { toolChoice: ToolChoice; parallel: boolean } {
  const parallel = choice === undefined || choice.type === 'none' ? true : !(choice.disable_parallel_tool_use ?? false);
  if (tools.length === 0) {
    if (choice !== undefined && (choice.type === 'any' || choice.type === 'tool')) {
      throw invalidParam('tool_choice', `tool_choice.type '${choice.type}' requires tools.`);
    }
    return { toolChoice: 'none', parallel };
  }
  switch (choice?.type) {
    case undefined:
    case 'auto':
      return { toolChoice: 'auto', parallel };
    case 'none':
      return { toolChoice: 'none', parallel };
    case 'any':
      return { toolChoice: 'required', parallel };
    case 'tool': {
      const name = choice.name;
      if (!tools.some((t) => t.function.name === name)) {
        throw invalidParam('tool_choice', `tool_choice names the tool '${name}', which is not in tools.`);
      }
      return { toolChoice: { type: 'function', function: { name } }, parallel };
    }
  }
}

/** One wire message → chat messages: a user turn's tool_result blocks become tool messages. */
function decodeMessage(m: WireMessage, at: string, toolNames: Map<string, string>): ChatMessage[] {
  const blocks: WireContentBlock[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
  if (m.role === 'assistant') return [decodeAssistant(blocks, at, toolNames)];
  const out: ChatMessage[] = [];
  let parts: ChatContentPart[] = [];
  const flush = (): void => {
    if (parts.length > 0) out.push(partsMessage('user', parts, '\n'));
    parts = [];
  };
  blocks.forEach((b, j) => {
    const where = `${at}.content.${j}`;
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', text: b.text ?? '' });
        break;
      case 'image':
        parts.push(imagePart(b, where));
        break;
      case 'tool_result': {
        flush();
        const id = b.tool_use_id ?? '';
        const msg = toolResult(b.content, `${where}.content`, b.is_error === true);
        msg.toolCallId = id;
        const name = toolNames.get(id);
        if (name !== undefined) msg.name = name;
        out.push(msg);
        break;
      }
      case 'document':
        throw unsupportedParam(where, 'this server does not accept document input');
      case 'thinking':
      case 'redacted_thinking':
        // Only assistant turns think; a client echoing one elsewhere loses nothing by its omission.
        break;
      default:
        throw invalidParam(`${where}.type`, `${where}.type: '${b.type}' is not a content block type this server accepts in a user turn.`);
    }
  });
  flush();
  // An empty user turn (content: []) still takes its place in the conversation.
  if (out.length === 0) out.push({ role: 'user', content: '' });
  return out;
}

function decodeAssistant(blocks: WireContentBlock[], at: string, toolNames: Map<string, string>): ChatMessage {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: ChatToolCall[] = [];
  blocks.forEach((b, j) => {
    const where = `${at}.content.${j}`;
    switch (b.type) {
      case 'text':
        texts.push(b.text ?? '');
        break;
      case 'thinking':
        reasoning.push(b.thinking ?? '');
        break;
      case 'redacted_thinking':
        // Encrypted by its producer: nothing the model could read.
        break;
      case 'tool_use': {
        const id = b.id ?? '';
        const name = b.name ?? '';
        toolNames.set(id, name);
        calls.push({ id, type: 'function', function: { name, arguments: JSON.stringify(b.input ?? {}) } });
        break;
      }
      default:
        throw invalidParam(
          `${where}.type`,
          `${where}.type: '${b.type}' is not a content block type this server accepts in an assistant turn.`,
        );
    }
  });
  const msg: ChatMessage = { role: 'assistant', content: texts.join('') };
  if (reasoning.length > 0) msg.reasoning = reasoning.join('\n');
  if (calls.length > 0) msg.toolCalls = calls;
  return msg;
}

/** An image block → its part; the source's fields are checked here (the schema only types them). */
function imagePart(b: WireContentBlock, where: string): ChatImagePart {
  const source = b.source;
  if (source === undefined) throw invalidParam(`${where}.source`, `${where}.source: Field required`);
  switch (source.type) {
    case 'base64':
      if (source.media_type === undefined) throw invalidParam(`${where}.source.media_type`, `${where}.source.media_type: Field required`);
      if (source.data === undefined) throw invalidParam(`${where}.source.data`, `${where}.source.data: Field required`);
      return { type: 'image', source: { kind: 'base64', mediaType: source.media_type, data: source.data }, param: where };
    case 'url':
      if (source.url === undefined) throw invalidParam(`${where}.source.url`, `${where}.source.url: Field required`);
      return { type: 'image', source: { kind: 'url', url: source.url }, param: where };
    case 'file':
      throw unsupportedParam(`${where}.source`, "image sources of type 'file' (this server has no Files API: send 'base64' or 'url')");
    default:
      throw invalidParam(`${where}.source.type`, `${where}.source.type: '${source.type}' is not an image source type (base64, url).`);
  }
}

/** A tool_result → a tool message: its content a string, or text and image blocks (texts joined by newlines). */
function toolResult(content: string | WireContentBlock[] | undefined, at: string, isError: boolean): ChatMessage {
  const parts: ChatContentPart[] =
    content === undefined
      ? []
      : typeof content === 'string'
        ? [{ type: 'text', text: content }]
        : content.map((b, k): ChatContentPart => {
            if (b.type === 'text') return { type: 'text', text: b.text ?? '' };
            if (b.type === 'image') return imagePart(b, `${at}.${k}`);
            if (b.type === 'document') throw unsupportedParam(`${at}.${k}`, 'this server does not accept document input');
            throw invalidParam(`${at}.${k}.type`, `${at}.${k}.type: '${b.type}' is not accepted in a tool_result.`);
          });
  if (isError) {
    if (parts[0]?.type === 'text') parts[0] = { type: 'text', text: `Error: ${parts[0].text}` };
    else parts.unshift({ type: 'text', text: 'Error: ' });
  }
  return partsMessage('tool', parts, '\n');
}

// ---------------------------------------------------------------------------------------------
// Encoding

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface WireUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** As Anthropic counts: input_tokens leaves out the prompt tokens read from the (prefix) cache. */
export function wireUsage(u: TokenUsage): WireUsage {
  return {
    input_tokens: u.promptTokens - u.cachedTokens,
    output_tokens: u.completionTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: u.cachedTokens,
  };
}

export type WireOutputBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `msg_` and 24 random letters and digits, as Anthropic's ids look. */
export function newMessageId(): string {
  // 248 = 4 × 62: no byte value is favoured.
  const chars = [...randomBytes(48)].filter((b) => b < 248).map((b) => ALPHANUMERIC[b % 62]);
  return `msg_${chars.join('').padEnd(24, '0').slice(0, 24)}`;
}

/** Tool-call ids come from the one pipeline as `call_<digits>`; Anthropic's clients expect `toolu_`. */
export function toolUseId(callId: string): string {
  return `toolu_${callId.replace(/^call_/, '')}`;
}

/**
 * The signature of a thinking block. Clients require the field and send it back with the block;
 * svc never checks it (it has nothing to verify), so any opaque string serves: a digest of the text.
 */
export function thinkingSignature(thinking: string): string {
  return createHash('sha256').update(thinking, 'utf8').digest('base64');
}

/** The Anthropic stop reason of a finish event (an 'error' finish never gets here: it is an error). */
export function stopReason(reason: FinishReason, stopSequence: string | null): StopReason {
  switch (reason) {
    case 'tool_calls':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    default:
      return stopSequence !== null ? 'stop_sequence' : 'end_turn';
  }
}

/** A tool call's accumulated arguments as the `input` object (a call the parser let through malformed: {}). */
export function toolInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args === '' ? '{}' : args);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Collects the events of one sequence into the non-streamed `message` body, blocks in output order. */
export class MessageBuilder {
  private readonly blocks: WireOutputBlock[] = [];
  /** Per tool-call index: its block and its arguments so far. */
  private readonly calls = new Map<number, { block: Extract<WireOutputBlock, { type: 'tool_use' }>; args: string }>();
  private stop: StopReason = 'end_turn';
  private stopSequence: string | null = null;

  constructor(
    private readonly id: string,
    private readonly model: string,
  ) {}

  add(events: OutputEvent[]): void {
    for (const e of events) {
      const last = this.blocks[this.blocks.length - 1];
      switch (e.type) {
        case 'reasoning':
          if (last?.type === 'thinking') last.thinking += e.text;
          else this.blocks.push({ type: 'thinking', thinking: e.text, signature: '' });
          break;
        case 'text':
          if (last?.type === 'text') last.text += e.text;
          else this.blocks.push({ type: 'text', text: e.text });
          break;
        case 'tool_call_start': {
          const block = { type: 'tool_use' as const, id: toolUseId(e.id), name: e.name, input: {} };
          this.blocks.push(block);
          this.calls.set(e.index, { block, args: '' });
          break;
        }
        case 'tool_call_args': {
          const call = this.calls.get(e.index);
          if (call) call.args += e.fragment;
          break;
        }
        case 'finish':
          this.stop = stopReason(e.reason, e.stopSequence ?? null);
          this.stopSequence = this.stop === 'stop_sequence' ? (e.stopSequence ?? null) : null;
      }
    }
  }

  build(counts: TokenUsage): unknown {
    for (const b of this.blocks) if (b.type === 'thinking') b.signature = thinkingSignature(b.thinking);
    for (const { block, args } of this.calls.values()) block.input = toolInput(args);
    return {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: this.blocks,
      stop_reason: this.stop,
      stop_sequence: this.stopSequence,
      usage: wireUsage(counts),
    };
  }
}
