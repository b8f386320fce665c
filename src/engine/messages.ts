// What crosses the port between the main thread (engine-client.ts) and the engine worker
// (worker.ts). Everything here is structured-clone friendly: plain objects, arrays, numbers.
import type { HighPrecisionLayers, KvCacheDtypeName } from './kv-plan.js';
import type { DraftMode } from './speculative/drafter.js';
import type { SchedulingPolicy } from './slo-policy.js';
import type { LoadProgress, ModelConfig } from '../model/types.js';
import type { PackedCacheReport } from '../model/loaders/packed-cache.js';
import type { ProfileSnapshot } from './profile.js';
import type { EngineFinishReason, EngineStats, GenerationRequest, TokenLogprob } from './types.js';
import type { MessagePort } from 'node:worker_threads';
import type { RowsDtype } from './expert-parallel/protocol.js';

/** EngineStats plus counters only the engine's own tests and metrics need. */
export interface WorkerStats extends EngineStats {
  /** Sequences sent back to waiting (blocks freed, to be recomputed or read back from swap) since start. */
  preemptions: number;
  /** Of those, the ones written to the swap space; and sequences read back from it. */
  swapOuts: number;
  swapIns: number;
  /** The online step-time model and slai's decisions; absent until the worker's first stats. */
  stepTime?: StepTimeStats;
}

export interface StepTimeStats {
  /** Steps measured since start. */
  steps: number;
  /** The fitted costs: ms per step, per token, per sampled row, per attended position. */
  costs: number[];
  /** The factor predictions are planned with: the 90th percentile of measured / predicted time. */
  margin: number;
  /** slai only: steps whose prefill was deferred, and steps whose budget the deadline cut. */
  slaiDeferred: number;
  slaiLimited: number;
}

/** Speculative decoding as the engine runs it (--ngram-speculative, --self-speculative, --speculative). */
export interface SpeculativeOptions {
  /** The one drafter, by the spec's precedence when several were asked for. */
  mode: DraftMode;
  /** Draft tokens per verify step (--num-drafts); the step verifies K = numDrafts + 1 rows. */
  numDrafts: number;
  /** --mtp-quantization: the MTP weights' precision, checked against the checkpoint. */
  mtpQuantization: 'nvfp4' | 'fp8' | 'bf16';
  /** --mtp-vocab: the MTP head scores the first N ids (clamped to the vocabulary); 0 = all. */
  mtpVocab: number;
}

/**
 * Two-rank expert parallelism as the head (rank 0) runs it: it listens for rank 1 at host:port and
 * sends it the rows routed to its experts (src/engine/expert-parallel/).
 */
export interface ExpertParallelOptions {
  /** 2 (the only size supported). */
  worldSize: number;
  /** Where the head listens for rank 1: --master-addr, else --bind; --master-port. */
  host: string;
  port: number;
  /** Start-up wait for rank 1; default SVC_EP_CONNECT_TIMEOUT_S. */
  connectTimeoutMs?: number;
  /** Per-layer reply timeout; default SVC_EP_REPLY_TIMEOUT_S. */
  replyTimeoutMs?: number;
  /** How rows travel; default SVC_EP_ROWS_DTYPE. */
  rowsDtype?: RowsDtype;
  /** Set by startEngine: the link's state and counters, shared with the main thread (control.ts). */
  control?: SharedArrayBuffer;
  /** Set by startEngine: the main thread's end hears the link's log lines (LinkEvent). */
  events?: MessagePort;
}

/** How to start an engine. Passed to the worker as its workerData. */
export interface EngineOptions {
  /** A Hugging Face layout directory or a .gguf file. */
  modelPath: string;
  /** GGUF: pack from the mapped file releasing each tensor's pages (true), or plain mmap (false). */
  fastLoad: boolean;
  /**
   * GGUF with fastLoad: directory of the packed-weights cache (src/model/loaders/packed-cache.ts):
   * packed weights are mapped from its file when valid, else packed and the file written once
   * serving. null or absent: no cache.
   */
  packedCacheDir?: string | null;
  /** --kv-cache-dtype: a storage dtype or an asymmetric K/V pair. */
  kvCacheDtype: KvCacheDtypeName;
  /** --kv-high-precision-layers: layers at each end kept in bf16; 0 (default) = the dtype's automatic value. */
  kvHighPrecisionLayers?: HighPrecisionLayers;
  /** --fp8-kv-calibration-tokens: fp8 layer scales from the max |K|, |V| of the first N tokens; 0 (default) = scale 1. */
  fp8KvCalibrationTokens?: number;
  /** Context length (prompt + completion); undefined = the model's own (max_position_embeddings). */
  maxSeqLen?: number;
  /** Most sequences holding KV and stepping together. */
  maxBatchSize: number;
  /** Prompt tokens prefilled per step (chunked prefill budget). */
  maxPrefillTokens: number;
  /** Most sequences queued or running; more are refused with queue_full. */
  maxNumSeqs: number;
  gpuMemoryUtilization: number;
  oomGuardMb: number;
  /** Tokens per KV block. */
  blockSize: number;
  /** Keep full KV blocks in a radix prefix cache shared by later sequences (--enable-prefix-caching). */
  enablePrefixCaching: boolean;
  /** Hybrid models with prefix caching: recurrent-state snapshots kept (--ssm-cache-slots); default 16. */
  ssmCacheSlots?: number;
  /** Hybrid models: blocks between recurrent-state snapshot checkpoints (--ssm-checkpoint-interval); default 256. */
  ssmCheckpointInterval?: number;
  /** Disk swap for preempted sequences' KV, in bytes (--swap-space-gb); 0 = recompute only. */
  swapSpaceBytes: number;
  /** Parent directory of the swap space; default /tmp/svc-swap. */
  swapRoot?: string;
  /** Device memory to budget against; default: os.totalmem() (the CPU backend's device memory). */
  memoryBytes?: number;
  /** Speculative decoding; null or absent = off. */
  speculative?: SpeculativeOptions | null;
  /** --profile: time every op and the step loop's parts (src/engine/profile.ts). */
  profile?: boolean;
  /** --adaptive-sampling: take the argmax of confident sampling rows (src/engine/adaptive-sampling.ts). */
  adaptiveSampling?: boolean;
  /** --scheduling-policy; default fifo. */
  schedulingPolicy?: SchedulingPolicy;
  /** --tbt-deadline-ms: the step-time deadline of slai; default 100. */
  tbtDeadlineMs?: number;
  /** --world-size 2 on the head: half the experts here, half on rank 1; null or absent = one rank. */
  expertParallel?: ExpertParallelOptions | null;
}

/** What the engine reports once loaded (the lead logs it). */
export interface EngineInfo {
  config: ModelConfig;
  /** The context length served: --max-seq-len, else the model's max_position_embeddings. */
  maxSeqLen: number;
  /** Kernel backend name (Ops.name). */
  ops: string;
  weightBytes: number;
  memoryBytes: number;
  kvCacheDtype: KvCacheDtypeName;
  /** The plan in words: the dtype and the layers promoted to bf16. */
  kvPlan: string;
  /** KV bytes one token takes over every layer, K and V: what the pool size follows from. */
  kvBytesPerToken: number;
  blockSize: number;
  kvBlocks: number;
  kvPoolTokens: number;
  kvPoolBytes: number;
  /** Whether the pool size came from the memory budget or the max-seq-len × max-num-seqs cap. */
  kvPoolLimitedBy: 'memory' | 'max-seqs';
  /** The swap space's private directory (removed at shutdown); null without swap. */
  swapDirectory: string | null;
  /** The speculative drafter running, or null. */
  drafter: DraftMode | null;
  /** What the drafter chose at start-up, for the log (the self drafter's skip set). */
  drafterDetail?: string;
  /** The packed-weights cache: what was mapped from its file and what was packed; null without one. */
  packedCache: PackedCacheReport | null;
  loadMs: number;
}

// main → worker

export type ToWorker =
  | { type: 'submit'; id: number; req: GenerationRequest; submittedAt: number }
  | { type: 'cancel'; id: number }
  /** The main thread's tokenizer (Tokenizer.packed, shared), once: tool-call grammars' vocabulary is worked out from it. */
  | { type: 'tokenizer'; packed: SharedArrayBuffer }
  /** Draft tokens per verify step from now on (MODEL.toml's default_num_drafts while --num-drafts is 1). */
  | { type: 'num-drafts'; numDrafts: number };

/** --profile: send the timing table back (answered between steps, outside the step loop). */
export interface ProfileRequest {
  type: 'profile';
  requestId: number;
}

// worker → main

/** Everything one step produced for one job: new tokens and, when it ended, how. */
export interface JobUpdate {
  id: number;
  ids: number[];
  logprobs?: TokenLogprob[];
  /** With the job's first generated token: prompt tokens whose KV came from the prefix cache. */
  cachedTokens?: number;
  done?: {
    reason: EngineFinishReason;
    message?: string;
  };
}

export type FromWorker =
  | { type: 'ready'; info: EngineInfo }
  | { type: 'load-error'; message: string }
  /** While loading: tensors taken by the model so far (throttled). */
  | { type: 'load-progress'; progress: LoadProgress }
  /** A line for the server's log (the packed-weights cache's: a file ignored, written, not writable). */
  | { type: 'log'; level: 'info' | 'warn'; message: string }
  /** A temporary file the worker is writing (the cache file before its rename), null once gone: removed at shutdown. */
  | { type: 'scratch-file'; path: string | null }
  /** One message per step (or per batch of cancellations), with the stats after it. */
  | { type: 'updates'; updates: JobUpdate[]; stats: WorkerStats }
  /** The answer to a 'profile' request; null when the engine was started without --profile. */
  | { type: 'profile'; requestId: number; profile: ProfileSnapshot | null };
