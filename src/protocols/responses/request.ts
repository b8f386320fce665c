// The Responses request: the wire body → ChatRequest. The conversation the model sees is the
// stored context (a previous response's chain, or a conversation's items), then this request's
// input items; `instructions` is a system message ahead of them (not carried to the next turn,
// as OpenAI does). The JSON schema is checked by the route first; here is what needs more.
import type { ModelSamplingDefaults } from '../../chat/model-runtime.js';
import {
  partsMessage,
  type ChatContentPart,
  type ChatImagePart,
  type ChatMessage,
  type ChatRequest,
  type OutputFormat,
  type ToolChoice,
  type ToolDefinition,
} from '../../chat/request.js';
import { invalidParam, unsupportedParam } from '../../common/api-error.js';
import { applyReasoningEffort, type ReasoningEffort } from '../../chat/reasoning-effort.js';
import type { Item, WireInputItem, WirePart } from './items.js';
import { requestSchema } from '../json-limits.js';

/** A function tool in the Responses' flat shape; other types (web_search, file_search, …) are skipped. */
export interface WireTool {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

export type WireToolChoice = 'none' | 'auto' | 'required' | { type: string; name?: string };

export type { ReasoningEffort };

export interface WireTextFormat {
  type: 'text' | 'json_object' | 'json_schema';
  name?: string;
  description?: string;
  schema?: Record<string, unknown> | boolean;
  strict?: boolean | null;
}

export interface ResponsesBody {
  model?: string;
  input?: string | WireInputItem[];
  instructions?: string | null;
  tools?: WireTool[] | null;
  tool_choice?: WireToolChoice | null;
  parallel_tool_calls?: boolean | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  previous_response_id?: string | null;
  conversation?: string | { id: string } | null;
  /** The spec's name for `conversation`. */
  conversation_id?: string | null;
  store?: boolean | null;
  stream?: boolean | null;
  reasoning?: { effort?: ReasoningEffort | null; summary?: string | null; generate_summary?: string | null } | null;
  include?: string[] | null;
  metadata?: Record<string, string> | null;
  text?: { format?: WireTextFormat | null; verbosity?: string | null } | null;
  truncation?: 'auto' | 'disabled' | null;
  user?: string | null;
  background?: boolean | null;
  service_tier?: string | null;
  prompt_cache_key?: string | null;
}

export interface ResponsesDefaults {
  defaultMinP: number;
  defaultTopNSigma: number;
  model?: ModelSamplingDefaults;
  disableThinking?: boolean;
}

export interface DecodedResponses {
  chat: ChatRequest;
  /** The tool choice as the response echoes it. */
  toolChoice: WireToolChoice;
  /** The function tools kept, as the response echoes them. */
  tools: WireTool[];
  warnings: string[];
}

/** The conversation this response continues, if any: `conversation` (id or {id}), else `conversation_id`. */
export function conversationId(body: ResponsesBody): string | null {
  const c = body.conversation;
  if (c !== undefined && c !== null) return typeof c === 'string' ? c : c.id;
  return body.conversation_id ?? null;
}

/** `context`: the stored items before this request's `input` (already normalized, with ids). */
export function decodeResponsesRequest(body: ResponsesBody, context: Item[], input: Item[], defaults: ResponsesDefaults): DecodedResponses {
  if (body.background === true) throw unsupportedParam('background', 'responses are generated while the request is open');
  const warnings: string[] = [];
  const tools: ToolDefinition[] = [];
  const kept: WireTool[] = [];
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (t.type !== 'function') {
      warnings.push(`tools[${i}]: tool type '${t.type}' is not supported and was skipped`);
      continue;
    }
    if (t.name === undefined || t.name === '') throw invalidParam(`tools.${i}.name`, `tools.${i}.name: Field required`);
    const fn: ToolDefinition['function'] = { name: t.name };
    if (t.description !== undefined && t.description !== null) fn.description = t.description;
    if (t.parameters !== undefined && t.parameters !== null) fn.parameters = t.parameters;
    tools.push({ type: 'function', function: fn });
    kept.push({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      strict: t.strict ?? true,
    });
  }
  const toolChoice = decodeToolChoice(body.tool_choice ?? 'auto', tools);

  const messages: ChatMessage[] = [];
  if (body.instructions !== undefined && body.instructions !== null && body.instructions !== '') {
    messages.push({ role: 'system', content: body.instructions });
  }
  // One pass over both, so that a function_call_output in `input` finds its call's name in the context.
  messages.push(...itemsToMessages([...context, ...input], 'input', context.length));

  const chatTemplateKwargs: Record<string, unknown> = {};
  let thinkingBudget: number | null = null;
  const effort = body.reasoning?.effort;
  if (effort !== undefined && effort !== null) thinkingBudget = applyReasoningEffort(effort, chatTemplateKwargs);
  if (defaults.disableThinking) chatTemplateKwargs.enable_thinking = false;

  const model = defaults.model ?? {};
  const chat: ChatRequest = {
    sampling: {
      temperature: body.temperature ?? model.temperature ?? 1.0,
      topK: model.top_k ?? 0,
      topP: body.top_p ?? model.top_p ?? 1.0,
      minP: model.min_p ?? defaults.defaultMinP,
      topNSigma: defaults.defaultTopNSigma,
      seed: null,
    },
    maxTokens: body.max_output_tokens ?? null,
    stop: [],
    stopTokenIds: [],
    ignoreEos: false,
    n: 1,
    logprobs: null,
    skipSpecialTokens: true,
    stream: body.stream ?? false,
    includeUsage: false,
    messages,
    tools: toolChoice.chat === 'none' ? [] : tools,
    toolChoice: toolChoice.chat,
    parallelToolCalls: body.parallel_tool_calls ?? true,
    chatTemplateKwargs,
    thinkingBudget,
    outputFormat: decodeTextFormat(body.text?.format),
  };
  return { chat, toolChoice: toolChoice.wire, tools: kept, warnings };
}

/** `text.format`: plain text, any JSON object, or JSON valid for `schema`. */
function decodeTextFormat(format: WireTextFormat | null | undefined): OutputFormat | null {
  if (format == null || format.type === 'text') return null;
  if (format.type === 'json_object') return { type: 'json_object', param: 'text.format' };
  if (format.schema === undefined) throw invalidParam('text.format.schema', "Missing required parameter: 'text.format.schema'.");
  const schema = requestSchema(format.schema, 'text.format.schema');
  return { type: 'json_schema', schema, ...(format.name !== undefined ? { name: format.name } : {}), param: 'text.format.schema' };
}

function decodeToolChoice(choice: WireToolChoice, tools: ToolDefinition[]): { chat: ToolChoice; wire: WireToolChoice } {
  if (typeof choice === 'string') {
    if (tools.length === 0) {
      if (choice === 'required') throw invalidParam('tool_choice', "tool_choice 'required' requires tools.");
      return { chat: 'none', wire: choice };
    }
    return { chat: choice, wire: choice };
  }
  if (choice.type !== 'function') throw unsupportedParam('tool_choice', `tool_choice type '${choice.type}'`);
  const name = choice.name;
  if (name === undefined) throw invalidParam('tool_choice.name', 'tool_choice.name: Field required');
  if (!tools.some((t) => t.function.name === name)) {
    throw invalidParam('tool_choice', `tool_choice names the function '${name}', which is not in tools.`);
  }
  return { chat: { type: 'function', function: { name } }, wire: { type: 'function', name } };
}

/**
 * A message's (or a function_call_output's) parts: text, and input_image where `images` says the
 * message may hold images (user messages and tool outputs); files and audio are refused.
 */
function decodeParts(parts: string | WirePart[], at: string, images: boolean): ChatContentPart[] {
  if (typeof parts === 'string') return [{ type: 'text', text: parts }];
  return parts.map((p, k): ChatContentPart => {
    const where = `${at}.${k}`;
    switch (p.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
      case 'summary_text':
      case 'reasoning_text':
        return { type: 'text', text: p.text ?? '' };
      case 'refusal':
        return { type: 'text', text: typeof p.refusal === 'string' ? p.refusal : '' };
      case 'input_image':
        if (!images)
          throw invalidParam(`${where}.type`, `${where}: input_image parts are accepted in user messages and function_call_output only.`);
        return imagePart(p, where);
      case 'input_file':
      case 'input_audio':
        throw unsupportedParam(where, 'this server does not accept file or audio input');
      default:
        throw invalidParam(`${where}.type`, `${where}.type: '${p.type}' is not a content part type this server accepts.`);
    }
  });
}

/** An input_image part: `image_url` (a data: or http(s) URL); `file_id` is refused (no Files API), `detail` ignored. */
function imagePart(p: WirePart, where: string): ChatImagePart {
  if (typeof p.image_url === 'string') return { type: 'image', source: { kind: 'url', url: p.image_url }, param: `${where}.image_url` };
  if (p.file_id !== undefined && p.file_id !== null) {
    throw unsupportedParam(`${where}.file_id`, "input_image by 'file_id' (this server has no Files API: send 'image_url')");
  }
  throw invalidParam(`${where}.image_url`, `${where}.image_url: Field required (a data: or http(s) URL)`);
}

/** Texts of parts, joined as Responses joins them (directly). */
function partsText(parts: ChatContentPart[]): string {
  return partsMessage('assistant', parts, '').content ?? '';
}

/**
 * Items → chat messages. A reasoning item, an assistant message and function calls that follow
 * each other are one assistant turn (as a model's output items are); a function_call_output is a
 * tool message.
 */
export function itemsToMessages(items: Item[], at: string, offset = 0): ChatMessage[] {
  const out: ChatMessage[] = [];
  const names = new Map<string, string>();
  /** The assistant turn being built, while the items continue it. */
  let turn: ChatMessage | null = null;
  const assistant = (): ChatMessage => {
    if (turn === null) {
      turn = { role: 'assistant', content: '' };
      out.push(turn);
    }
    return turn;
  };
  items.forEach((item, i) => {
    const where = `${at}.${i - offset}`;
    switch (item.type) {
      case 'reasoning': {
        const text = (item.content ?? []).map((p) => p.text).join('') || item.summary.map((s) => s.text).join('\n');
        // Reasoning opens a turn; after the turn's text or calls it starts the next one.
        if (turn !== null && (turn.content !== '' || turn.toolCalls !== undefined)) turn = null;
        const t = assistant();
        if (text !== '') t.reasoning = t.reasoning === undefined ? text : `${t.reasoning}\n${text}`;
        break;
      }
      case 'message': {
        const parts = decodeParts(item.content, `${where}.content`, item.role === 'user');
        if (item.role === 'assistant') {
          const t = assistant();
          t.content = `${t.content ?? ''}${partsText(parts)}`;
        } else {
          turn = null;
          out.push(partsMessage(item.role, parts, ''));
        }
        break;
      }
      case 'function_call': {
        const t = assistant();
        names.set(item.call_id, item.name);
        (t.toolCalls ??= []).push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
        break;
      }
      case 'function_call_output': {
        turn = null;
        const msg: ChatMessage = {
          ...partsMessage('tool', decodeParts(item.output, `${where}.output`, true), ''),
          toolCallId: item.call_id,
        };
        const name = names.get(item.call_id);
        if (name !== undefined) msg.name = name;
        out.push(msg);
        break;
      }
    }
  });
  return out;
}
