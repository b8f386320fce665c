// A sequence is plain state: its tokens, how many of them are in the KV cache, the blocks that
// hold them, and what ends it. The scheduler moves it between queues; nothing here computes.
import { createHash } from 'node:crypto';
import type { EngineFinishReason, EngineImage, GenerationRequest, SamplingParams } from './types.js';
import type { DecodedImage, ImageTokens } from '../model/vision/types.js';
import { createRng, type Rng } from './sampler.js';
import type { LogitsProcessor } from './logits/index.js';
import type { SwapHandle } from './kv-swap.js';

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
  /** Leading blocks of blockTable that are in the prefix cache (full, immutable, shareable). */
  numRegistered: number;
  /** Prompt tokens found in the prefix cache when it was first scheduled; null before that. */
  cachedPromptTokens: number | null;
  /** While preempted to disk: where its KV for tokens [0, numCached) is (it holds no blocks then). */
  swapped: SwapHandle | null;
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
  /**
   * What shapes its next token beyond sampling (thinking budget, tool-call grammar), each with its
   * own per-token state; set at admission, empty = plain sampling.
   */
  processors: LogitsProcessor[];
  /** Vision models: the prompt's images, by offset (empty for a text-only prompt). */
  readonly images: readonly SequenceImage[];
  /** Hybrid models: the recurrent-state slot it holds while running (StateSlots); null otherwise. */
  stateSlot: number | null;
}

/** An image of the prompt: its tokens [offset, offset + numTokens) and what fills their rows. */
export interface SequenceImage extends ImageTokens {
  readonly offset: number;
  /** The pixels, until they are encoded. */
  source: DecodedImage | null;
  /** [numTokens, hiddenSize] once encoded; kept, since a preempted sequence computes its prompt again. */
  embeddings: Float32Array | null;
  /**
   * What its tokens are in prefix-cache keys instead of the image token id, which every image
   * shares: a 48-bit hash of its size and pixels, negative so that it is never a token id.
   */
  readonly cacheKey: number;
}

export function createSequence(id: number, req: GenerationRequest, submittedAt: number): Sequence {
  return {
    id,
    tokens: [...req.promptTokens],
    numPromptTokens: req.promptTokens.length,
    numCached: 0,
    blockTable: [],
    numRegistered: 0,
    cachedPromptTokens: null,
    swapped: null,
    status: 'waiting',
    finishReason: null,
    maxTokens: req.maxTokens,
    stopTokenIds: new Set(req.stopTokenIds),
    sampling: req.sampling,
    logprobs: req.logprobs,
    deadline: req.timeoutMs > 0 ? submittedAt + req.timeoutMs : Infinity,
    rng: createRng(req.sampling.seed),
    numPreemptions: 0,
    processors: [],
    images: (req.images ?? []).map(sequenceImage),
    stateSlot: null,
  };
}

function sequenceImage({ offset, numTokens, grid, image }: EngineImage): SequenceImage {
  const hash = createHash('sha256').update(`${image.width}x${image.height}:`).update(image.rgb).digest();
  return { offset, numTokens, ...(grid ? { grid } : {}), source: image, embeddings: null, cacheKey: -1 - hash.readUIntBE(0, 6) };
}

/**
 * The sequence's tokens as the prefix cache keys them: its tokens, with each image's tokens
 * replaced by that image's cacheKey, so that two prompts share a block only when their pictures match.
 */
export function cacheKeyTokens(seq: Sequence): readonly number[] {
  if (seq.images.length === 0) return seq.tokens;
  const keys = seq.tokens.slice();
  for (const img of seq.images) keys.fill(img.cacheKey, img.offset, img.offset + img.numTokens);
  return keys;
}

export function numCompletionTokens(seq: Sequence): number {
  return seq.tokens.length - seq.numPromptTokens;
}

/** Tokens not yet in the cache: the whole prompt before prefill, 1 while decoding (more after a step that took several). */
export function numUncached(seq: Sequence): number {
  return seq.tokens.length - seq.numCached;
}
