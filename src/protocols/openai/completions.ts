// OpenAI legacy completions: the wire request → CompletionRequest, and OutputEvents → the
// `text_completion` body or stream chunks. A batch of prompts times n sequences each gives
// choices indexed prompt-major (prompt i, sequence j → i * n + j), as OpenAI numbers them.
import type { TokenLogprob } from '../../engine/types.js';
import type { FinishReason, OutputEvent } from '../../chat/events.js';
import type { CompletionRequest, PromptInput } from '../../chat/request.js';
import { invalidParam, unsupportedParam, type ApiError } from '../../common/api-error.js';
import type { SseFrame, StreamEncoder, TokenUsage } from '../stream.js';
import { decodeOutputFormat, type WireStructuredFields } from './structured.js';
import { closingFrames, dataFrames, errorFrames } from './stream.js';
import {
  decodeGenerationFields,
  tokenString,
  usage,
  type ResponseMeta,
  type SamplingDefaults,
  type TokenBytes,
  type WireGenerationFields,
} from './chat.js';

export interface CompletionBody extends WireGenerationFields, WireStructuredFields {
  prompt: string | string[] | number[] | number[][];
  echo?: boolean | null;
  suffix?: string | null;
  /** Legacy form: how many top alternatives to return per token. */
  logprobs?: number | null;
  best_of?: number | null;
}

/** OpenAI's (and vLLM's) default completion length for this protocol. */
export const DEFAULT_COMPLETION_MAX_TOKENS = 16;

export function decodeCompletionRequest(body: CompletionBody, defaults: SamplingDefaults): CompletionRequest {
  if (body.suffix != null && body.suffix !== '') throw unsupportedParam('suffix');
  const fields = decodeGenerationFields(body, defaults);
  if (body.best_of != null && body.best_of !== fields.n) {
    throw unsupportedParam('best_of', "only a value equal to 'n' is accepted");
  }
  const echo = body.echo ?? false;
  if (echo && body.logprobs != null) {
    throw unsupportedParam('echo', "'echo' together with 'logprobs' needs prompt log-probabilities");
  }
  return {
    ...fields,
    // Left out: the legacy default, stretched to min_tokens when that asks for more.
    maxTokens: body.max_tokens ?? Math.max(DEFAULT_COMPLETION_MAX_TOKENS, fields.minTokens ?? 0),
    logprobs: body.logprobs ?? null,
    prompts: decodePrompt(body.prompt),
    echo,
    outputFormat: decodeOutputFormat(body),
  };
}

function decodePrompt(prompt: CompletionBody['prompt']): PromptInput[] {
  if (typeof prompt === 'string') return [{ text: prompt }];
  if (prompt.length === 0) throw invalidParam('prompt', "'prompt' must not be an empty array.");
  const first = prompt[0];
  if (typeof first === 'string') return (prompt as string[]).map((text) => ({ text }));
  const lists = typeof first === 'number' ? [prompt as number[]] : (prompt as number[][]);
  lists.forEach((tokens, i) => {
    const bad = tokens.findIndex((id) => id < 0);
    if (bad >= 0) {
      const at = typeof first === 'number' ? `prompt[${bad}]` : `prompt[${i}][${bad}]`;
      throw invalidParam(at, `Invalid value for '${at}': token ids must be non-negative integers, but got ${tokens[bad]}.`);
    }
  });
  return lists.map((tokens) => ({ tokens }));
}

interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

/**
 * A token as the legacy logprobs write it: its text, or — for a token holding part of a UTF-8
 * character — `bytes:` and the bytes with each byte outside a whole character as `\xNN`, as
 * OpenAI's completions API writes such tokens (e.g. `bytes:\xe2\x80`). So the raw bytes can be
 * read back from the legacy shape, which has no `bytes` field.
 */
export function legacyTokenString(bytes: Uint8Array): string {
  return isUtf8(bytes) ? tokenString(bytes) : `bytes:${tokenString(bytes)}`;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Per choice: accumulates legacy logprob records, keeping text offsets into the choice's text. */
class LogprobTrack {
  offset: number;
  data: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  /** The choice's token bytes so far, decoded: a token's offset is where its first whole character starts. */
  private readonly text = new TextDecoder('utf-8');

  constructor(startOffset: number) {
    this.offset = startOffset;
  }

  add(lps: TokenLogprob[], topN: number, tokenBytes: TokenBytes): void {
    for (const lp of lps) {
      const bytes = tokenBytes(lp.id);
      this.data.tokens.push(legacyTokenString(bytes));
      this.data.token_logprobs.push(lp.logprob);
      this.data.top_logprobs.push(Object.fromEntries(lp.top.slice(0, topN).map((t) => [legacyTokenString(tokenBytes(t.id)), t.logprob])));
      // A token that starts inside a character points at that character.
      this.data.text_offset.push(this.offset);
      this.offset += this.text.decode(bytes, { stream: true }).length;
    }
  }

  take(): LegacyLogprobs {
    const d = this.data;
    this.data = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    return d;
  }
}

function textOf(events: OutputEvent[]): string {
  let s = '';
  for (const e of events) if (e.type === 'text') s += e.text;
  return s;
}

function finishOf(events: OutputEvent[]): FinishReason | null {
  for (const e of events) if (e.type === 'finish') return e.reason;
  return null;
}

/** Builds the non-streamed `text_completion` body. `echoes[i]` is choice i's prompt text or ''. */
export class CompletionBuilder {
  private readonly texts: string[];
  private readonly finishes: (FinishReason | null)[];
  private readonly tracks: LogprobTrack[];

  constructor(
    private readonly meta: ResponseMeta,
    echoes: string[],
    private readonly logprobs: number | null,
    private readonly tokenBytes: TokenBytes,
  ) {
    this.texts = [...echoes];
    this.finishes = echoes.map(() => null);
    this.tracks = echoes.map((e) => new LogprobTrack(e.length));
  }

  add(index: number, events: OutputEvent[], lps: TokenLogprob[]): void {
    this.texts[index] += textOf(events);
    this.finishes[index] = finishOf(events) ?? this.finishes[index]!;
    if (this.logprobs !== null) this.tracks[index]!.add(lps, this.logprobs, this.tokenBytes);
  }

  build(counts: TokenUsage): unknown {
    return {
      id: this.meta.id,
      object: 'text_completion',
      created: this.meta.created,
      model: this.meta.model,
      choices: this.texts.map((text, index) => ({
        index,
        text,
        logprobs: this.logprobs === null ? null : this.tracks[index]!.take(),
        finish_reason: this.finishes[index] ?? 'stop',
      })),
      usage: usage(counts),
    };
  }
}

/** Turns OutputEvents into streamed `text_completion` chunks. */
export class CompletionChunkEncoder implements StreamEncoder {
  private readonly tracks: LogprobTrack[];

  constructor(
    private readonly meta: ResponseMeta,
    private readonly echoes: string[],
    private readonly logprobs: number | null,
    private readonly includeUsage: boolean,
    private readonly tokenBytes: TokenBytes,
  ) {
    this.tracks = echoes.map((e) => new LogprobTrack(e.length));
  }

  /** With echo, each choice opens with its prompt text. */
  start(): SseFrame[] {
    return dataFrames(this.echoes.flatMap((text, index) => (text === '' ? [] : [this.chunk(index, text, null)])));
  }

  step(index: number, events: OutputEvent[], lps: TokenLogprob[]): SseFrame[] {
    if (this.logprobs !== null) this.tracks[index]!.add(lps, this.logprobs, this.tokenBytes);
    const out: unknown[] = [];
    const text = textOf(events);
    if (text !== '') out.push(this.chunk(index, text, null));
    const finish = finishOf(events);
    // An error is reported as an error frame (error() below), not as a finish reason.
    if (finish !== null && finish !== 'error') out.push(this.chunk(index, '', finish));
    return dataFrames(out);
  }

  /** The usage chunk when asked for, then [DONE]. */
  finish(counts: TokenUsage | null): SseFrame[] {
    const last = this.includeUsage && counts !== null;
    return closingFrames(last ? { ...this.header(), choices: [], usage: usage(counts) } : null);
  }

  error(err: ApiError): SseFrame[] {
    return errorFrames(err);
  }

  private header(): Record<string, unknown> {
    return { id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model };
  }

  private chunk(index: number, text: string, finish: FinishReason | null): unknown {
    let logprobs: LegacyLogprobs | null = null;
    if (this.logprobs !== null) {
      const lp = this.tracks[index]!.take();
      // Held-back tokens wait for the chunk that carries their text (or the closing one).
      if (lp.tokens.length > 0 || finish !== null) logprobs = lp;
      else this.tracks[index]!.data = lp;
    }
    const chunk: Record<string, unknown> = { ...this.header(), choices: [{ index, text, logprobs, finish_reason: finish }] };
    if (this.includeUsage) chunk.usage = null;
    return chunk;
  }
}
