// The Messages stream, as Anthropic sends it: every frame is a named event (`event: <type>` and
// `data: {"type": <type>, …}`). message_start; per content block content_block_start, its
// deltas (text_delta, thinking_delta then one signature_delta, input_json_delta) and
// content_block_stop, one block open at a time with indexes counting from 0; then message_delta
// (stop_reason, stop_sequence, usage) and message_stop, which ends the stream. `ping` opens the
// stream and keeps it alive while the model is silent; a failure is an `error` event, the last.
import type { OutputEvent } from '../../chat/events.js';
import type { ApiError } from '../../common/api-error.js';
import type { SseFrame, StreamEncoder, TokenUsage } from '../stream.js';
import { renderAnthropicError } from './errors.js';
import { stopReason, thinkingSignature, toolUseId, wireUsage, type StopReason } from './messages.js';

type BlockKind = 'thinking' | 'text' | 'tool_use';

const frame = (type: string, fields: Record<string, unknown>): SseFrame => ({ event: type, data: { type, ...fields } });

export const PING: SseFrame = frame('ping', {});

export class MessageStreamEncoder implements StreamEncoder {
  readonly keepAlive: { everyMs: number; frames: () => SseFrame[] };
  /** Index of the last block opened; -1 before the first. */
  private index = -1;
  private open: BlockKind | null = null;
  /** The open thinking block's text, for its signature. */
  private thinking = '';
  /** Block index of each tool call (by the pipeline's call index). */
  private readonly callBlocks = new Map<number, number>();
  private stop: StopReason = 'end_turn';
  private stopSequence: string | null = null;

  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly inputTokens: number,
    /** How long the stream may stay silent before a ping. */
    pingEveryMs = 10_000,
  ) {
    this.keepAlive = { everyMs: pingEveryMs, frames: () => [PING] };
  }

  start(): SseFrame[] {
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: wireUsage({ promptTokens: this.inputTokens, cachedTokens: 0, completionTokens: 0 }),
    };
    return [frame('message_start', { message }), PING];
  }

  step(_index: number, events: OutputEvent[]): SseFrame[] {
    const out: SseFrame[] = [];
    // Consecutive text (or thinking) pieces of one step go out as one delta.
    let pending = '';
    const flush = (): void => {
      if (pending === '') return;
      if (this.open === 'thinking') out.push(this.delta(this.index, { type: 'thinking_delta', thinking: pending }));
      else out.push(this.delta(this.index, { type: 'text_delta', text: pending }));
      pending = '';
    };
    for (const e of events) {
      switch (e.type) {
        case 'reasoning':
        case 'text': {
          const kind = e.type === 'reasoning' ? 'thinking' : 'text';
          if (this.open !== kind) {
            flush();
            this.openBlock(out, kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' });
          }
          if (kind === 'thinking') this.thinking += e.text;
          pending += e.text;
          break;
        }
        case 'tool_call_start':
          flush();
          this.openBlock(out, { type: 'tool_use', id: toolUseId(e.id), name: e.name, input: {} });
          this.callBlocks.set(e.index, this.index);
          break;
        case 'tool_call_args': {
          flush();
          const block = this.callBlocks.get(e.index);
          if (block !== undefined && e.fragment !== '') {
            out.push(this.delta(block, { type: 'input_json_delta', partial_json: e.fragment }));
          }
          break;
        }
        case 'finish':
          flush();
          this.closeBlock(out);
          // An error finish is reported by error() instead.
          if (e.reason !== 'error') {
            this.stop = stopReason(e.reason, e.stopSequence ?? null);
            this.stopSequence = this.stop === 'stop_sequence' ? (e.stopSequence ?? null) : null;
          }
      }
    }
    flush();
    return out;
  }

  finish(usage: TokenUsage | null): SseFrame[] {
    const out: SseFrame[] = [];
    this.closeBlock(out);
    out.push(
      frame('message_delta', {
        delta: { stop_reason: this.stop, stop_sequence: this.stopSequence },
        usage: wireUsage(usage ?? { promptTokens: this.inputTokens, cachedTokens: 0, completionTokens: 0 }),
      }),
      frame('message_stop', {}),
    );
    return out;
  }

  error(err: ApiError): SseFrame[] {
    return [{ event: 'error', data: renderAnthropicError(err) }];
  }

  private delta(index: number, delta: Record<string, unknown>): SseFrame {
    return frame('content_block_delta', { index, delta });
  }

  private openBlock(out: SseFrame[], block: Record<string, unknown> & { type: BlockKind }): void {
    this.closeBlock(out);
    this.index++;
    this.open = block.type;
    out.push(frame('content_block_start', { index: this.index, content_block: block }));
  }

  /** Ends the open block: a thinking block gets its signature first. */
  private closeBlock(out: SseFrame[]): void {
    if (this.open === null) return;
    if (this.open === 'thinking') {
      out.push(this.delta(this.index, { type: 'signature_delta', signature: thinkingSignature(this.thinking) }));
      this.thinking = '';
    }
    out.push(frame('content_block_stop', { index: this.index }));
    this.open = null;
  }
}
