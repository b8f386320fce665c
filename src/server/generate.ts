// Running a request's sequences on the engine, for any protocol route: the length budget, the
// per-key token limit, engine submission (admission errors → HTTP errors), cancelling on client
// disconnect, merging the n sequences' steps in arrival order, and the numbers the request log
// line reports.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EngineAdmissionError, type GenerationRequest, type GenerationHandle } from '../engine/types.js';
import type { GrammarConstraint } from '../engine/grammar/index.js';
import { badWordsTokenIds } from '../engine/logits/bad-words.js';
import type { Tokenizer } from '../model/tokenizer.js';
import type { ChatOutputFactory } from '../chat/output-plan.js';
import { OutputPipeline, runSequence, type SequenceStep } from '../chat/pipeline.js';
import type { ChatPrompt } from '../chat/prompt.js';
import type { ChatRequest, GenerationOptions } from '../chat/request.js';
import type { ModelRuntime } from '../chat/model-runtime.js';
import { contextLengthExceeded, expertRankUnavailable, invalidParam, modelNotLoaded, serverBusy } from '../common/api-error.js';
import type { GenerationLog } from '../ops/request-log.js';
import type { TokenUsage } from '../protocols/stream.js';

/**
 * The completion length to ask for: the request's, else the room left in the context; when tools
 * are present, also at most --tool-max-tokens. Refuses requests that cannot fit, as OpenAI does.
 */
export function resolveMaxTokens(promptLen: number, requested: number | null, maxSeqLen: number, cap: number | null): number {
  const room = maxSeqLen - promptLen;
  if (room <= 0) {
    throw contextLengthExceeded(
      `This model's maximum context length is ${maxSeqLen} tokens. However, your prompt is ${promptLen} tokens, ` +
        'which leaves no room for a completion. Please reduce the length of the prompt.',
    );
  }
  if (requested !== null && requested > room) {
    throw contextLengthExceeded(
      `This model's maximum context length is ${maxSeqLen} tokens. However, you requested ${promptLen + requested} tokens ` +
        `(${promptLen} in the prompt, ${requested} in the completion). Please reduce the length of the prompt or completion.`,
      'max_tokens',
    );
  }
  const n = requested ?? room;
  return cap === null ? n : Math.min(n, cap);
}

/**
 * The engine job for sequence `seq` of a request (seeds differ per sequence, so n choices differ;
 * everything else is the same, and each sequence's logits processors are its own in the engine).
 */
export function engineJob(
  opts: GenerationOptions,
  promptTokens: number[],
  maxTokens: number,
  model: Pick<ModelRuntime, 'eosTokenIds' | 'tokenizer'>,
  timeoutSec: number,
  seq: number,
): GenerationRequest {
  const seed = opts.sampling.seed;
  return {
    promptTokens,
    maxTokens,
    sampling: { ...opts.sampling, seed: seed === null ? null : seed + seq },
    stopTokenIds: [...new Set([...(opts.ignoreEos ? [] : model.eosTokenIds), ...opts.stopTokenIds])],
    timeoutMs: timeoutSec * 1000,
    // The engine reports the sampled token's logprob only alongside ≥ 1 alternative.
    logprobs: opts.logprobs === null ? 0 : Math.max(1, opts.logprobs),
    logitBias: opts.logitBias ?? null,
    presencePenalty: opts.presencePenalty ?? 0,
    frequencyPenalty: opts.frequencyPenalty ?? 0,
    repetitionPenalty: opts.repetitionPenalty ?? 1,
    minTokens: opts.minTokens ?? 0,
    badWords: badWordIds(opts, model.tokenizer),
  };
}

/** bad_words tokenized, once per request (its sequences share the options object). */
const badWordsCache = new WeakMap<GenerationOptions, number[][]>();
function badWordIds(opts: GenerationOptions, tokenizer: Tokenizer): number[][] {
  if (!opts.badWords || opts.badWords.length === 0) return [];
  let ids = badWordsCache.get(opts);
  if (ids === undefined) badWordsCache.set(opts, (ids = badWordsTokenIds(tokenizer, opts.badWords)));
  return ids;
}

/**
 * The job with a grammar to enforce. The grammar's end tokens always end the output, ignore_eos or
 * not: once the grammar is complete nothing else may follow.
 */
export function withConstraint(job: GenerationRequest, constraint: GrammarConstraint | null): GenerationRequest {
  if (!constraint) return { ...job, constraint: null };
  return { ...job, constraint, stopTokenIds: [...new Set([...job.stopTokenIds, ...constraint.endTokenIds])] };
}

export interface SequenceSpec {
  job: GenerationRequest;
  pipeline: OutputPipeline;
}

/**
 * Sequence `seq` of a chat request, as every chat protocol runs it: the engine job, with the output
 * plan's constraint (tool_choice grammar) and thinking budget, and the pipeline that reads its tokens.
 */
export function chatSequence(
  chat: ChatRequest,
  prompt: ChatPrompt,
  maxTokens: number,
  runtime: ModelRuntime,
  chatOutput: ChatOutputFactory,
  timeoutSec: number,
  seq = 0,
): SequenceSpec {
  const plan = chatOutput({ request: chat, runtime, promptText: prompt.text });
  const job = {
    ...withConstraint(engineJob(chat, prompt.tokens, maxTokens, runtime, timeoutSec, seq), plan.constraint ?? null),
    thinkingBudget: plan.thinkingBudget ?? null,
    // Vision models: the images, whose placeholders buildChatPrompt expanded (src/chat/image-prompt.ts).
    ...(prompt.images ? { images: prompt.images } : {}),
  };
  const pipeline = new OutputPipeline({
    decoder: runtime.tokenizer,
    skipSpecialTokens: chat.skipSpecialTokens && !plan.keepSpecialTokens,
    stop: chat.stop,
    stopTokenIds: job.stopTokenIds,
    minTokens: job.minTokens,
    stages: plan.stages,
  });
  return { job, pipeline };
}

export interface IndexedStep {
  index: number;
  step: SequenceStep;
}

/**
 * Submits every sequence and returns their steps merged in arrival order. All jobs are cancelled
 * when the client disconnects before the reply is finished, or when the consumer stops early.
 */
export function runSequences(
  runtime: ModelRuntime,
  specs: SequenceSpec[],
  /** Prompt tokens for usage: counted once per distinct prompt, not per sequence. */
  promptTokens: number,
  request: FastifyRequest,
  reply: FastifyReply,
): AsyncGenerator<IndexedStep> {
  const handles: GenerationHandle[] = [];
  const cancelAll = (): void => handles.forEach((h) => h.cancel());
  // More sequences than the engine ever holds would be refused forever: a client error, not 503.
  if (specs.length > runtime.engine.maxSequences) {
    throw invalidParam(
      'n',
      `This request needs ${specs.length} sequences (n × prompts) but the server runs at most ${runtime.engine.maxSequences} at once (--max-num-seqs).`,
    );
  }
  // Per-key token limit (src/ops/rate-limiter.ts): the prompt now (or a 429), the generated
  // tokens when the request ends.
  const rateLimit = request.rateLimitTokens;
  rateLimit?.admit(promptTokens);
  try {
    for (const s of specs) handles.push(runtime.engine.submit(s.job));
  } catch (err) {
    cancelAll();
    rateLimit?.refund();
    throw admissionToApiError(err);
  }
  const log: GenerationLog = {
    promptTokens,
    cachedTokens: 0,
    completionTokens: 0,
    ttftMs: null,
    decodeMs: 0,
    decodeTokens: 0,
    toolsUsed: [],
    finishReasons: specs.map(() => ''),
  };
  request.generation = log;
  // 'close' before the response was fully written means the client is gone.
  const onClose = (): void => {
    if (!reply.raw.writableFinished) cancelAll();
  };
  reply.raw.once('close', onClose);
  const sequences = specs.map((s, i) => runSequence(handles[i]!, s.pipeline));
  return track(merge(sequences), log, firstOfPrompt(specs), reply, () => {
    reply.raw.off('close', onClose);
    cancelAll();
    rateLimit?.settle(log.completionTokens);
  });
}

/** A finished generation's counts for the protocol's usage report. */
export function tokenUsage(g: GenerationLog): TokenUsage {
  return { promptTokens: g.promptTokens, cachedTokens: g.cachedTokens, completionTokens: g.completionTokens };
}

/**
 * Per sequence, whether it is the first one of its prompt (n > 1 submits a prompt n times): usage
 * counts a prompt once, with the cache hit of its first sequence (the others share its blocks).
 */
function firstOfPrompt(specs: readonly SequenceSpec[]): boolean[] {
  const seen = new Set<readonly number[]>();
  return specs.map(({ job }) => {
    const first = !seen.has(job.promptTokens);
    seen.add(job.promptTokens);
    return first;
  });
}

async function* track(
  steps: AsyncGenerator<IndexedStep>,
  log: GenerationLog,
  countsCache: readonly boolean[],
  reply: FastifyReply,
  cleanup: () => void,
): AsyncGenerator<IndexedStep> {
  /** When the first token came (ms since arrival), and the sequences that have had their first step. */
  let firstAt = -1;
  const started = new Set<number>();
  try {
    for await (const s of steps) {
      if (s.step.ids.length > 0) {
        const now = reply.elapsedTime;
        if (firstAt < 0) {
          firstAt = now;
          log.ttftMs = Math.round(now);
        }
        // Decode throughput counts the tokens after each sequence's first step, over the time
        // from the request's first token to its last.
        if (started.has(s.index)) log.decodeTokens += s.step.ids.length;
        else started.add(s.index);
        log.decodeMs = now - firstAt;
      }
      // Counted as tokens arrive, so a request cut off by its client still logs what it got.
      log.completionTokens += s.step.ids.length;
      if (s.step.cachedTokens !== undefined && countsCache[s.index]) log.cachedTokens += s.step.cachedTokens;
      for (const e of s.step.events) {
        if (e.type === 'tool_call_start') log.toolsUsed.push(e.name);
        if (e.type === 'finish') log.finishReasons[s.index] = e.reason;
      }
      yield s;
    }
  } finally {
    // Normal end: every job is done and cancel is a no-op; early exit: frees their KV blocks.
    cleanup();
  }
}

async function* merge(sources: AsyncGenerator<SequenceStep>[]): AsyncGenerator<IndexedStep> {
  type Next = { index: number; result: IteratorResult<SequenceStep> };
  const pull = (index: number): Promise<Next> => sources[index]!.next().then((result) => ({ index, result }));
  const pending = new Map<number, Promise<Next>>(sources.map((_, i) => [i, pull(i)]));
  try {
    while (pending.size > 0) {
      const { index, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(index);
        continue;
      }
      pending.set(index, pull(index));
      yield { index, step: result.value };
    }
  } finally {
    for (const [index] of pending) void sources[index]!.return(undefined);
  }
}

function admissionToApiError(err: unknown): unknown {
  if (!(err instanceof EngineAdmissionError)) return err;
  switch (err.kind) {
    case 'queue_full':
      // Retriable overload: 503 like OpenAI's "engine overloaded", with a hint when to retry.
      return serverBusy(err.message);
    case 'too_long':
      return contextLengthExceeded(err.message);
    case 'not_ready':
      return modelNotLoaded();
    case 'peer_unavailable':
      return expertRankUnavailable(err.message);
  }
}
