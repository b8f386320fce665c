// A sequence is plain state: its tokens, how many of them are in the KV cache, the blocks that
// hold them, and what ends it. The scheduler moves it between queues; nothing here computes.
import type { EngineFinishReason, GenerationRequest, SamplingParams, ThinkingBudget } from './types.js';
import { createRng, type Rng } from './sampler.js';
import type { GrammarState, ToolGrammar } from './grammar/index.js';

export type SequenceStatus = 'waiting' | 'running' | 'finished';

export interface Sequence {
  readonly id: number;
  /** Prompt followed by every generated token. */
  readonly tokens: number[];
  readonly numPromptTokens: number;
  /** Leading tokens whose K/V are in the cache; the rest still have to be run through the model. */
  numCached: number;
  /** Physical KV blocks holding tokens [0, numCached), in order. */
  readonly blockTable: number[];
  status: SequenceStatus;
  finishReason: EngineFinishReason | null;
  readonly maxTokens: number;
  readonly stopTokenIds: ReadonlySet<number>;
  readonly sampling: SamplingParams;
  /** Top log-probabilities to report per token; 0 = none. */
  readonly logprobs: number;
  /** Absolute time (ms since the epoch) after which it ends with 'timeout'; Infinity = never. */
  readonly deadline: number;
  readonly rng: Rng;
  /** How often it lost its blocks and went back to waiting (for stats and tests). */
  numPreemptions: number;
  /** Tool-call grammar and where the output stands in it; null = unconstrained. */
  grammar: ToolGrammar | null;
  grammarState: GrammarState | null;
  /** Reasoning ceiling and progress: inside a think block, tokens spent, tokens still to force. */
  readonly thinking: ThinkingBudget | null;
  inReasoning: boolean;
  reasoningTokens: number;
  forced: number[];
}

export function createSequence(id: number, req: GenerationRequest, submittedAt: number): Sequence {
  return {
    id,
    tokens: [...req.promptTokens],
    numPromptTokens: req.promptTokens.length,
    numCached: 0,
    blockTable: [],
    status: 'waiting',
    finishReason: null,
    maxTokens: req.maxTokens,
    stopTokenIds: new Set(req.stopTokenIds),
    sampling: req.sampling,
    logprobs: req.logprobs,
    deadline: req.timeoutMs > 0 ? submittedAt + req.timeoutMs : Infinity,
    rng: createRng(req.sampling.seed),
    numPreemptions: 0,
    grammar: null,
    grammarState: null,
    thinking: req.thinkingBudget ?? null,
    inReasoning: req.thinkingBudget?.startsInside ?? false,
    reasoningTokens: 0,
    forced: [],
  };
}

export function numCompletionTokens(seq: Sequence): number {
  return seq.tokens.length - seq.numPromptTokens;
}

/** Tokens not yet in the cache: the whole prompt before prefill, 1 while decoding. */
export function numUncached(seq: Sequence): number {
  return seq.tokens.length - seq.numCached;
}

export function lastToken(seq: Sequence): number {
  return seq.tokens[seq.tokens.length - 1];
}

/**
 * The token the thinking budget imposes next, or null to sample freely. Call before sampling;
 * `noteToken` afterwards keeps the count.
 */
export function forcedToken(seq: Sequence): number | null {
  const t = seq.thinking;
  if (t === null) return null;
  if (seq.forced.length === 0 && seq.inReasoning && seq.reasoningTokens >= t.maxTokens) seq.forced = [...t.forceTokenIds];
  return seq.forced.length > 0 ? seq.forced.shift()! : null;
}

/** Tracks think-block boundaries for the thinking budget. */
export function noteToken(seq: Sequence, token: number): void {
  const t = seq.thinking;
  if (t === null) return;
  if (token === t.openTokenId) {
    seq.inReasoning = true;
  } else if (token === t.closeTokenId) {
    seq.inReasoning = false;
  } else if (seq.inReasoning) {
    seq.reasoningTokens++;
  }
}
