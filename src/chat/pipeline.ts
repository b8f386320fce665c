// The output pipeline of one generated sequence, the same for every protocol:
//   token ids → incremental detokenizer → stop strings → text stages → OutputEvents + finish.
// Text stages are the seam for the reasoning splitter and the tool-call parser: each takes the
// events so far and may split text events into reasoning / tool-call events. With no stages the
// text comes out as plain {type:'text'} events.
import { randomInt } from 'node:crypto';
import type { EngineEvent, EngineFinishReason, GenerationHandle, TokenLogprob } from '../engine/types.js';
import type { FinishReason, OutputEvent, ToolCallParser } from './events.js';
import { IncrementalDetokenizer, type IdDecoder } from './detokenizer.js';
import { StopStringMatcher } from './stop-strings.js';

/** One transformation of the event stream (reasoning splitter, tool-call parser …). */
export interface OutputStage {
  push(events: OutputEvent[]): OutputEvent[];
  /** End of output: flush whatever is held back. */
  finish(): OutputEvent[];
  /** True once the stage has decided the output is over (a second tool call under parallel_tool_calls false). */
  readonly ended?: boolean;
}

export interface PipelineOptions {
  decoder: IdDecoder;
  skipSpecialTokens: boolean;
  stop: readonly string[];
  /** Ids that end generation (EOS …): never turned into text, as OpenAI and vLLM do. */
  stopTokenIds: readonly number[];
  stages: OutputStage[];
  /** The prompt, when the output continues it as plain text (completions): see IncrementalDetokenizer. */
  context?: readonly number[];
  /**
   * min_tokens: a stop string ending in the text of the first this-many generated tokens does not
   * end the output (the engine holds back the stop tokens meanwhile). Default 0.
   */
  minTokens?: number;
}

export class OutputPipeline {
  private readonly detok: IncrementalDetokenizer;
  private readonly stops: StopStringMatcher;
  private readonly hidden: Set<number>;
  private sawToolCall = false;
  /** Generated tokens pushed so far (stop tokens included). */
  private generated = 0;

  constructor(private readonly opts: PipelineOptions) {
    this.detok = new IncrementalDetokenizer(opts.decoder, opts.skipSpecialTokens, opts.context);
    this.stops = new StopStringMatcher(opts.stop);
    this.hidden = new Set(opts.stopTokenIds);
  }

  /** The stop string that ended the output; the caller then cancels the engine job. */
  get stopString(): string | null {
    return this.stops.stopped;
  }

  /** The output is over before the engine says so (a stop string, or a stage ended it): cancel the job. */
  get ended(): boolean {
    return this.stops.stopped !== null || this.opts.stages.some((st) => st.ended === true);
  }

  push(ids: readonly number[]): OutputEvent[] {
    if (this.ended) return [];
    // Stop strings are armed once past min_tokens: a step straddling it is pushed in two parts.
    const unarmed = Math.min(ids.length, Math.max(0, (this.opts.minTokens ?? 0) - this.generated));
    let text = '';
    if (unarmed > 0) text = this.pushText(ids.slice(0, unarmed), false);
    if (unarmed < ids.length && this.stops.stopped === null) text += this.pushText(unarmed > 0 ? ids.slice(unarmed) : ids, true);
    this.generated += ids.length;
    return text === '' ? [] : this.runStages(text, false);
  }

  /** Detokenized and through the stop strings: the text that is safe to pass on. */
  private pushText(ids: readonly number[], armed: boolean): string {
    const text = this.detok.push(ids.filter((id) => !this.hidden.has(id)));
    return text === '' ? '' : this.stops.push(text, armed).text;
  }

  /** Flushes every stage and appends the finish event. */
  finish(engineReason: EngineFinishReason): OutputEvent[] {
    // After a stop string the held text belongs to the cut-off part.
    let tail = '';
    if (this.stops.stopped === null) {
      tail = this.stops.push(this.detok.finish(), this.generated > (this.opts.minTokens ?? 0)).text;
      if (this.stops.stopped === null) tail += this.stops.finish();
    }
    const events = this.runStages(tail, true);
    events.push({ type: 'finish', reason: this.finishReason(engineReason), stopSequence: this.stops.stopped });
    return events;
  }

  private runStages(text: string, final: boolean): OutputEvent[] {
    const events = runTextStages(this.opts.stages, text, final);
    if (events.some((e) => e.type === 'tool_call_start')) this.sawToolCall = true;
    return events;
  }

  private finishReason(engineReason: EngineFinishReason): FinishReason {
    if (engineReason === 'error') return 'error';
    // As vLLM: once a call was parsed the client has to act on it, however the text ended.
    if (this.sawToolCall) return 'tool_calls';
    if (this.stops.stopped !== null) return 'stop';
    // A timeout cuts the output short like the token limit does; the client can continue it.
    if (engineReason === 'length' || engineReason === 'timeout') return 'length';
    return 'stop';
  }
}

/** One piece of text through every stage in order; `final` flushes each stage after it. */
export function runTextStages(stages: readonly OutputStage[], text: string, final: boolean): OutputEvent[] {
  let events: OutputEvent[] = text === '' ? [] : [{ type: 'text', text }];
  for (const stage of stages) {
    events = stage.push(events);
    if (final) events = events.concat(stage.finish());
  }
  return events;
}

/** What a reasoning splitter does: text in, text and reasoning pieces out. */
export interface TextSplitter {
  push(text: string): { type: 'text' | 'reasoning'; text: string }[];
  finish(): { type: 'text' | 'reasoning'; text: string }[];
  /** True once the splitter has read the end of the output: the stage ends it. */
  readonly ended?: boolean;
}

/** The adapter for a reasoning splitter: it sees text events only. */
export function reasoningStage(splitter: TextSplitter): OutputStage {
  return {
    push(events) {
      const out: OutputEvent[] = [];
      for (const e of events) {
        if (e.type === 'text') out.push(...splitter.push(e.text));
        else out.push(e);
      }
      return out;
    },
    finish() {
      return splitter.finish();
    },
    get ended() {
      return splitter.ended === true;
    },
  };
}

/** The adapter for a tool-call parser: it sees text events only and gets ids for its calls. */
export function toolCallStage(parser: ToolCallParser): OutputStage {
  const ids = new Map<number, string>();
  const convert = (out: OutputEvent[], parsed: ReturnType<ToolCallParser['push']>): void => {
    for (const p of parsed) {
      if (p.type === 'tool_call_start') {
        const id = newToolCallId();
        ids.set(p.index, id);
        out.push({ type: 'tool_call_start', index: p.index, id, name: p.name });
      } else out.push(p);
    }
  };
  return {
    push(events) {
      const out: OutputEvent[] = [];
      for (const e of events) {
        if (e.type === 'text') convert(out, parser.push(e.text));
        else out.push(e);
      }
      return out;
    },
    finish() {
      const out: OutputEvent[] = [];
      convert(out, parser.finish());
      return out;
    },
  };
}

/** `call_` followed by digits, as the spec shows tool-call ids. */
export function newToolCallId(): string {
  let digits = '';
  for (let i = 0; i < 3; i++) digits += String(randomInt(0, 1e9)).padStart(9, '0');
  return `call_${digits}`;
}

/** What one engine event turned into. */
export interface SequenceStep {
  events: OutputEvent[];
  /** Log-probabilities of the tokens of this step (when requested). */
  logprobs: TokenLogprob[];
  /** Generated token ids of this step. */
  ids: number[];
  /** On the first step with tokens: prompt tokens that came from the prefix cache. */
  cachedTokens?: number;
  /** Set on the last step. */
  done?: { engineReason: EngineFinishReason; message?: string };
}

/**
 * Drives one engine job through a pipeline. On a stop string (or a stage that ends the output) the
 * job is cancelled (its KV blocks are freed) and the sequence ends right there; tokens the engine
 * had already made are dropped.
 */
export async function* runSequence(handle: GenerationHandle, pipeline: OutputPipeline): AsyncGenerator<SequenceStep> {
  let last: Extract<EngineEvent, { type: 'done' }> | null = null;
  for await (const ev of handle.events) {
    if (ev.type === 'done') {
      last = ev;
      break;
    }
    const events = pipeline.push(ev.ids);
    const cached = ev.cachedTokens !== undefined ? { cachedTokens: ev.cachedTokens } : {};
    if (pipeline.ended) {
      handle.cancel();
      events.push(...pipeline.finish('stop'));
      yield { events, logprobs: ev.logprobs ?? [], ids: ev.ids, ...cached, done: { engineReason: 'stop' } };
      return;
    }
    yield { events, logprobs: ev.logprobs ?? [], ids: ev.ids, ...cached };
  }
  // An event stream that ends without 'done' means the engine went away. A job cancelled that
  // the client still listens to was cancelled by the server (shutdown): an error to that client.
  let reason: EngineFinishReason = last?.reason ?? 'error';
  let message = last ? last.message : 'the engine ended the job without finishing it';
  if (reason === 'cancelled') {
    reason = 'error';
    message ??= 'the job was cancelled by the server';
  }
  yield { events: pipeline.finish(reason), logprobs: [], ids: [], done: { engineReason: reason, message } };
}
