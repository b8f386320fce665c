// The engine's face toward the main thread: what a generation job is and what comes back.
// The engine itself (model, KV pool, scheduler, step loop) runs in a worker thread.
import type { GrammarConstraint } from './grammar/index.js';
import type { ProfileSnapshot } from './profile.js';
import type { DecodedImage, ImageTokens } from '../model/vision/types.js';

export interface SamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** 0 = off. */
  topK: number;
  /** 1 = off. */
  topP: number;
  /** 0 = off. */
  minP: number;
  /** Keep logits within topNSigma standard deviations of the max; 0 = off. */
  topNSigma: number;
  /** null = nondeterministic. The same seed gives the same tokens, alone or batched. */
  seed: number | null;
}

export interface GenerationRequest {
  promptTokens: number[];
  /** Upper bound on generated tokens. */
  maxTokens: number;
  sampling: SamplingParams;
  /** Token ids that end generation (EOS and friends); empty when ignore_eos. */
  stopTokenIds: number[];
  /** Wall-clock limit in ms from submission; 0 = none. */
  timeoutMs: number;
  /** Top log-probabilities to return per token; 0 = none. */
  logprobs: number;
  /**
   * A grammar the output must match (tool calls, for tool_choice required / a named function),
   * as data the worker compiles; null = free.
   */
  constraint?: GrammarConstraint | null;
  /** Cap on reasoning tokens: past it the engine forces the end of the think block. */
  thinkingBudget?: ThinkingBudget | null;
  /** OpenAI's logit_bias: added to those tokens' logits; absent = none. */
  logitBias?: LogitBias | null;
  /** OpenAI's presence_penalty: subtracted from the logit of every token generated so far; 0 = off. */
  presencePenalty?: number;
  /** OpenAI's frequency_penalty: subtracted once per time a token was generated so far; 0 = off. */
  frequencyPenalty?: number;
  /** vLLM's repetition_penalty over prompt and generated tokens (positive logits ÷, negative ×); 1 = off. */
  repetitionPenalty?: number;
  /** vLLM's min_tokens: the stop token ids cannot be sampled before this many generated tokens; 0 = off. */
  minTokens?: number;
  /**
   * vLLM's bad_words as token-id sequences: a word's last token is banned where the generated
   * tokens end with its other tokens. Absent = none.
   */
  badWords?: number[][];
  /**
   * Vision models: the prompt's images, in prompt order. Each one's tokens
   * [offset, offset + numTokens) are the model's image token; the worker's vision encoder turns
   * the pixels into those rows' embeddings. Absent = a text-only prompt.
   */
  images?: EngineImage[];
}

/** An image of a prompt: where its tokens are and its pixels (ImageTokenLayout said how many tokens). */
export interface EngineImage extends ImageTokens {
  readonly offset: number;
  readonly image: DecodedImage;
}

/** Token ids and the bias added to each one's logit (same length; ids distinct). */
export interface LogitBias {
  ids: number[];
  biases: number[];
}

/**
 * A reasoning-token ceiling. Tokens between `openTokenId` (or the start, when the prompt left a
 * think block open) and `closeTokenId` count; at `maxTokens` the `forceTokenIds` (e.g. the ids
 * of "\n</think>\n\n") are emitted token by token instead of sampling.
 */
export interface ThinkingBudget {
  maxTokens: number;
  startsInside: boolean;
  openTokenId: number;
  closeTokenId: number;
  forceTokenIds: number[];
}

export interface TokenLogprob {
  id: number;
  logprob: number;
  top: { id: number; logprob: number }[];
}

export type EngineFinishReason = 'stop' | 'length' | 'cancelled' | 'timeout' | 'error';

export type EngineEvent =
  | {
      type: 'tokens';
      ids: number[];
      logprobs?: TokenLogprob[];
      /** With the first tokens: prompt tokens whose KV came from the prefix cache. */
      cachedTokens?: number;
    }
  | {
      type: 'done';
      reason: EngineFinishReason;
      message?: string;
    };

/** A submitted job: its event stream and a way to abandon it (frees its sequence and KV blocks). */
export interface GenerationHandle {
  events: AsyncIterable<EngineEvent>;
  cancel(): void;
}

/** Why a job was refused at submission. */
export class EngineAdmissionError extends Error {
  constructor(
    readonly kind: 'queue_full' | 'too_long' | 'not_ready' | 'peer_unavailable',
    message: string,
  ) {
    super(message);
  }
}

export interface EngineStats {
  running: number;
  waiting: number;
  kvBlocksTotal: number;
  kvBlocksUsed: number;
  kvPoolTokens: number;
  /** Blocks in the prefix cache, owned by a sequence or not. */
  kvBlocksCached: number;
  /** Prompt tokens of admitted sequences looked up in the prefix cache, and those found (since start). */
  prefixQueriedTokens: number;
  prefixHitTokens: number;
  /** Speculative decoding since start: tokens drafted, draft tokens the model agreed with, and verify steps. */
  draftedTokens: number;
  acceptedDraftTokens: number;
  verifySteps: number;
}

/** Expert parallelism's peer, as the head sees it: never connected yet, serving, gone, or the listener failed. */
export type PeerState = 'waiting' | 'connected' | 'lost' | 'failed';

/** The head's view of two-rank expert parallelism (--world-size 2), for /health and /metrics. */
export interface ExpertParallelStatus {
  worldSize: number;
  rank: number;
  /** host:port the head listens on for the worker. */
  endpoint: string;
  peers: PeerState;
  /** Since start, on the link's socket: bytes each way (handshakes included), requests and rows sent, connections accepted. */
  bytesSent: number;
  bytesReceived: number;
  requests: number;
  rowsSent: number;
  connections: number;
}

export interface Engine {
  /** Most sequences it holds queued or running at once (--max-num-seqs). */
  readonly maxSequences: number;
  /** Throws EngineAdmissionError when the job cannot be queued. */
  submit(req: GenerationRequest): GenerationHandle;
  stats(): EngineStats;
  shutdown(): Promise<void>;
  /** --profile's timing table (src/engine/profile.ts); null, or absent, when not profiling. */
  profile?(): Promise<ProfileSnapshot | null>;
  /** Expert parallelism's state (--world-size 2); null, or absent, on one rank. */
  expertParallel?(): ExpertParallelStatus | null;
}
