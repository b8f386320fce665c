// OutputEvents → the Responses' output items and the events that build them, and the `response`
// object. One accumulator serves both the streamed and the non-streamed reply: it emits the item
// events (without sequence numbers; the stream encoder numbers and sends them, the body builder
// drops them), so the item ids and contents are the same either way.
import type { FinishReason, OutputEvent } from '../../chat/events.js';
import type { ApiError } from '../../common/api-error.js';
import { newItemId, type FunctionCallItem, type MessageItem, type OutputItem, type ReasoningItem } from './items.js';
import type { ReasoningEffort, WireTool, WireToolChoice } from './request.js';
import type { TokenUsage } from '../stream.js';

/** One Responses event before its sequence number. */
export type ResponseEvent = { type: string } & Record<string, unknown>;

export type ResponseStatus = 'completed' | 'incomplete' | 'failed' | 'in_progress' | 'cancelled';

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function responseUsage(u: TokenUsage, reasoning: number): ResponseUsage {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.completionTokens,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

/** What a response echoes of its request. */
export interface ResponseEcho {
  instructions: string | null;
  tools: WireTool[];
  tool_choice: WireToolChoice;
  parallel_tool_calls: boolean;
  temperature: number;
  top_p: number;
  max_output_tokens: number | null;
  previous_response_id: string | null;
  conversation: { id: string } | null;
  store: boolean;
  metadata: Record<string, string>;
  reasoning: { effort: ReasoningEffort | null; summary: string | null };
  text: Record<string, unknown>;
  truncation: 'auto' | 'disabled';
  user: string | null;
}

export interface ResponseObject extends ResponseEcho {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  model: string;
  output: OutputItem[];
  output_text: string;
  usage: ResponseUsage | null;
  background: boolean;
  service_tier: string;
}

export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
}

/** The response object; `output_text` is the text of its messages' output_text parts. */
export function responseObject(
  meta: ResponseMeta,
  echo: ResponseEcho,
  state: {
    status: ResponseStatus;
    output: OutputItem[];
    usage: ResponseUsage | null;
    error?: { code: string; message: string } | null;
    incompleteReason?: string | null;
  },
): ResponseObject {
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status: state.status,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason ? { reason: state.incompleteReason } : null,
    model: meta.model,
    output: state.output,
    output_text: outputText(state.output),
    usage: state.usage,
    background: false,
    service_tier: 'default',
    ...echo,
  };
}

export function outputText(output: readonly OutputItem[]): string {
  return output
    .filter((item): item is MessageItem => item.type === 'message')
    .flatMap((m) => m.content.filter((p) => p.type === 'output_text').map((p) => p.text ?? ''))
    .join('');
}

/** The status a finish reason gives (an 'error' finish is failed; 'length' ran out of max_output_tokens). */
export function finishStatus(reason: FinishReason | null): { status: ResponseStatus; incompleteReason: string | null } {
  if (reason === 'length') return { status: 'incomplete', incompleteReason: 'max_output_tokens' };
  if (reason === 'error') return { status: 'failed', incompleteReason: null };
  return { status: 'completed', incompleteReason: null };
}

export function responseError(err: ApiError): { code: string; message: string } {
  return { code: err.code ?? 'server_error', message: err.message };
}

type Open =
  | { kind: 'reasoning'; item: ReasoningItem; index: number; text: string }
  | { kind: 'message'; item: MessageItem; index: number; text: string }
  | { kind: 'function_call'; item: FunctionCallItem; index: number };

/**
 * Builds the output items from a sequence's OutputEvents, one item open at a time: reasoning
 * (one reasoning_text part), message (one output_text part), function_call. `onItemDone` sees
 * each item as it completes (the route stores function calls then).
 */
export class OutputItems {
  readonly items: OutputItem[] = [];
  finishReason: FinishReason | null = null;
  private open: Open | null = null;
  /** The function_call item of each pipeline call index. */
  private readonly calls = new Map<number, Open & { kind: 'function_call' }>();

  constructor(private readonly onItemDone: (item: OutputItem) => void = () => {}) {}

  push(events: OutputEvent[]): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    // Consecutive text (or reasoning) pieces of one step go out as one delta.
    let pending = '';
    const flush = (): void => {
      const o = this.open;
      if (pending === '' || o === null || o.kind === 'function_call') return;
      const ids = { item_id: o.item.id, output_index: o.index, content_index: 0 };
      if (o.kind === 'reasoning') out.push({ type: 'response.reasoning_text.delta', ...ids, delta: pending });
      else out.push({ type: 'response.output_text.delta', ...ids, delta: pending, logprobs: [] });
      pending = '';
    };
    for (const e of events) {
      switch (e.type) {
        case 'reasoning':
        case 'text': {
          const kind = e.type === 'reasoning' ? 'reasoning' : 'message';
          if (this.open?.kind !== kind) {
            flush();
            this.close(out);
            this.openText(out, kind);
          }
          (this.open as Open & { text: string }).text += e.text;
          pending += e.text;
          break;
        }
        case 'tool_call_start': {
          flush();
          this.close(out);
          const item: FunctionCallItem = {
            type: 'function_call',
            id: newItemId('function_call'),
            call_id: e.id,
            name: e.name,
            arguments: '',
            status: 'in_progress',
          };
          const open = { kind: 'function_call' as const, item, index: this.items.length };
          this.items.push(item);
          this.open = open;
          this.calls.set(e.index, open);
          out.push({ type: 'response.output_item.added', output_index: open.index, item: { ...item } });
          break;
        }
        case 'tool_call_args': {
          flush();
          const call = this.calls.get(e.index);
          if (call === undefined || e.fragment === '') break;
          call.item.arguments += e.fragment;
          out.push({ type: 'response.function_call_arguments.delta', item_id: call.item.id, output_index: call.index, delta: e.fragment });
          break;
        }
        case 'finish':
          flush();
          this.close(out);
          this.finishReason = e.reason;
      }
    }
    flush();
    return out;
  }

  /** Closes the open item (the end of output closes it too). */
  close(out: ResponseEvent[] = []): ResponseEvent[] {
    const o = this.open;
    if (o === null) return out;
    this.open = null;
    const ids = { item_id: o.item.id, output_index: o.index };
    switch (o.kind) {
      case 'reasoning': {
        const part = { type: 'reasoning_text' as const, text: o.text };
        o.item.content = [part];
        out.push(
          { type: 'response.reasoning_text.done', ...ids, content_index: 0, text: o.text },
          { type: 'response.content_part.done', ...ids, content_index: 0, part: { ...part } },
        );
        break;
      }
      case 'message': {
        const part = { type: 'output_text', text: o.text, annotations: [], logprobs: [] };
        o.item.content = [part];
        out.push(
          { type: 'response.output_text.done', ...ids, content_index: 0, text: o.text, logprobs: [] },
          { type: 'response.content_part.done', ...ids, content_index: 0, part: { ...part } },
        );
        break;
      }
      case 'function_call':
        out.push({ type: 'response.function_call_arguments.done', ...ids, name: o.item.name, arguments: o.item.arguments });
    }
    o.item.status = 'completed';
    out.push({ type: 'response.output_item.done', output_index: o.index, item: structuredClone(o.item) });
    this.onItemDone(o.item);
    return out;
  }

  private openText(out: ResponseEvent[], kind: 'reasoning' | 'message'): void {
    const index = this.items.length;
    if (kind === 'reasoning') {
      const item: ReasoningItem = { type: 'reasoning', id: newItemId('reasoning'), summary: [], content: [], status: 'in_progress' };
      this.items.push(item);
      this.open = { kind, item, index, text: '' };
      out.push(
        { type: 'response.output_item.added', output_index: index, item: structuredClone(item) },
        {
          type: 'response.content_part.added',
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: 'reasoning_text', text: '' },
        },
      );
    } else {
      const item: MessageItem = { type: 'message', id: newItemId('message'), role: 'assistant', status: 'in_progress', content: [] };
      this.items.push(item);
      this.open = { kind, item, index, text: '' };
      out.push(
        { type: 'response.output_item.added', output_index: index, item: structuredClone(item) },
        {
          type: 'response.content_part.added',
          item_id: item.id,
          output_index: index,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
        },
      );
    }
  }
}
