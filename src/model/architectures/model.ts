// What every architecture exposes to the engine (one batched forward step over the paged KV cache),
// and what an architecture module tells the loaders and builds.
import type { AttentionSeq, KvLayer, Ops, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import type { DecoderOptions } from './decoder-layer.js';
import type { ModelOptions } from './expert-placement.js';

/** One engine step: the new tokens of every scheduled sequence, laid out sequence after sequence. */
export interface ForwardBatch {
  /** All new tokens of this step, sequence after sequence. */
  tokens: Int32Array;
  /** Position of each token within its sequence. */
  positions: Int32Array;
  /** KV slot (block * blockSize + offset) where each token's k/v is stored. */
  slots: Int32Array;
  /** Per sequence: its rows [qStart, qStart + qLen) and its kvLen / blockTable. */
  seqs: AttentionSeq[];
  /** Which token rows need logits (usually each sequence's last row). */
  logitRows: Int32Array;
  /** Vision models: rows whose input is an image embedding instead of the token's (src/model/vision/). */
  inputEmbeddings?: InputEmbeddings;
  /** Qwen2-VL's multimodal RoPE: [3, n] temporal / height / width positions; absent, all three are `positions`. */
  mropePositions?: Int32Array;
  /**
   * Models with recurrent layers (Model.createRecurrentState): per entry of `seqs`, the slot of the
   * RecurrentState holding that sequence's state, distinct within a batch. A sequence whose rows start
   * at position 0 (kvLen − qLen === 0) starts from a zero state (the model resets its slot); any other
   * continues from the slot. After the step the slot holds the state after the sequence's last row.
   */
  stateSlots?: Int32Array;
}

/**
 * Per-sequence state of a model's recurrent layers (Qwen3.5's Gated DeltaNet: per layer, the conv
 * window and the delta-rule matrix), in numSlots slots the engine assigns to sequences
 * (ForwardBatch.stateSlots), beside the paged KV cache its attention layers use. Unlike KV blocks a
 * slot is overwritten by every step, so keeping a state for later (a prefix, a draft to roll back)
 * means copying it to a free slot.
 */
export interface RecurrentState {
  readonly numSlots: number;
  /** Bytes one slot holds over all recurrent layers. */
  readonly bytesPerSlot: number;
  /** Zeroes `slot` (a sequence starting from nothing). */
  reset(slot: number): void;
  /** Makes `toSlot` a copy of `fromSlot` (snapshot / restore). */
  copy(fromSlot: number, toSlot: number): void;
}

/** Row rows[i] of a batch takes values[i·hidden, (i + 1)·hidden) as its input in place of its token's embedding. */
export interface InputEmbeddings {
  rows: Int32Array;
  values: Float32Array;
}

/** Rows of lm_head for a subset of the vocabulary, prepared once (OutputHead): drafts' logits at a fraction of the cost. */
export interface OutputHead {
  /** The token id of each logit column. */
  readonly ids: Int32Array;
  readonly weight: WeightMatrix;
}

/** Variations on a forward pass, for drafting and calibration; the default pass takes none. */
export interface ForwardOptions {
  /** Layers left out (self-speculative drafting): the residual stream passes them unchanged and their KV is not written. */
  readonly skipLayers?: ReadonlySet<number>;
  /** Logits over head.ids only: [logitRows.length, head.ids.length]. */
  readonly head?: OutputHead;
  /**
   * Called with the residual stream [rows, hiddenSize] after the embedding (index 0) and after each
   * layer l that ran (index l + 1), as Hugging Face numbers hidden_states: layer-importance calibration.
   * A view of scratch memory, valid during the call.
   */
  readonly onHidden?: (index: number, hidden: Float32Array) => void;
}

export interface Model {
  readonly config: ModelConfig;
  /**
   * Runs the step, writing each token's k/v into `kv` (one KvLayer per layer, skipped layers' left
   * as they were; a recurrent layer's KvLayer is unused) and, for models with recurrent layers, each
   * sequence's state into `state` at batch.stateSlots. Returns logits [logitRows.length, vocab] (or
   * over options.head's ids).
   */
  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions, state?: RecurrentState): Float32Array;
  /**
   * Models with recurrent layers only: state for `numSlots` sequences, all zero, that forward takes
   * with batch.stateSlots (required then). Attention-only models have no such method.
   */
  createRecurrentState?(numSlots: number): RecurrentState;
  /** lm_head rows `ids` as f32, into out [ids.length, hiddenSize]: what a drafter picks its vocabulary from. */
  outputRows(ids: Int32Array, out: Float32Array): void;
  /** An OutputHead over `ids` (bf16 copies of their lm_head rows), for forward's options.head. */
  outputHead(ids: Int32Array): OutputHead;
  /**
   * The final hidden state (after the last layer, before the final norm) of every row of the last
   * forward, [rows, hiddenSize]: a view of scratch memory, valid until the next forward (MTP drafting).
   */
  lastHidden(): Float32Array;
}

/**
 * One architecture: how its checkpoints' configs are read where families differ, and the forward
 * pass. Which checkpoint names reach it is its row in ARCHITECTURES (index.ts).
 */
export interface ArchitectureModule {
  /**
   * config.json `sliding_window`: applied always (Mistral), only with `use_sliding_window: true`
   * (Qwen2 / Qwen3 carry a value even when it is off), or never. GGUF files set it only when it applies.
   */
  readonly hfSlidingWindow: 'always' | 'use_sliding_window' | 'never';
  /** q/k/v biases whatever the config says (Qwen2: hard-coded in transformers, not in its config). */
  readonly alwaysQkvBias: boolean;
  /** llama.cpp's converter interleaved its GGUF Q/K rows ("normal" RoPE); the GGUF loader undoes it. */
  readonly ggufQkPermuted: boolean;
  /**
   * Vision-language wrappers (LLaVA): config.json's text_config is the language model, of a family of
   * its own (ModelConfig.textArchitecture) that runs the text path; the rest of the config is the
   * vision encoder's (ModelConfig.visionHfConfig).
   */
  readonly wrapsTextConfig?: boolean;
  /**
   * Vision-language models read as one family (Qwen2-VL): a config.json with a `vision_config` object
   * is kept whole as ModelConfig.visionHfConfig, for the vision encoder; a text-only one has none.
   */
  readonly keepsVisionConfig?: boolean;
  /** Routed experts (mixture of experts): how its config.json describes them; absent for dense families. */
  readonly experts?: ExpertConfigRules;
  /**
   * transformers' config-class defaults where they differ from what config.json reading assumes
   * (Gemma: head_dim 256, soft-caps, sliding window; OLMo 2: rms_norm_eps 1e-5): used for keys the
   * config.json (or its text_config) leaves out. An explicit null in config.json stays null.
   */
  readonly hfDefaults?: Readonly<Record<string, unknown>>;
  /**
   * Reads the family's own config.json keys (the merged config, defaults filled in) into ModelConfig
   * fields, set over the common ones (Gemma's layer types, soft-caps, RoPE bases; Qwen3.5's layer_types
   * and linear-attention shapes). Throws an Error
   * saying what it cannot run.
   */
  hfConfig?(raw: Readonly<Record<string, unknown>>): Partial<ModelConfig>;
  /**
   * Reads the family's own GGUF metadata (llama.cpp's `<arch>.*` keys its converter writes and its
   * runtime reads, and rules llama.cpp keeps in code where the file says nothing) into ModelConfig
   * fields, set over the common ones (`common`: sizes, eps, RoPE base, …). Throws an Error saying what
   * it cannot run. Tensor names and values are the GGUF loader's (loaders/gguf-names.ts).
   */
  ggufConfig?(gguf: GgufConfigReader, common: ModelConfig): Partial<ModelConfig>;
  /**
   * GGUF keys this family's files hold as per-layer arrays (Nemotron-H's head_count_kv and feed_forward_length,
   * 0 on the layers without that part), read by its ggufConfig (GgufConfigReader.value); the common fields
   * take the largest entry. Other families' varying arrays are refused.
   */
  readonly ggufPerLayerKeys?: readonly string[];
  /** How its decoder layers run (biases, q/k norms, sliding window): the main stack's and an MTP layer's alike. */
  decoderOptions(config: ModelConfig): DecoderOptions;
  /** Builds the model for `checkpoint`, preparing its weights for `ops` once (options: where a MoE model's experts run). */
  create(checkpoint: Checkpoint, ops: Ops, options?: ModelOptions): Model;
}

/** Where MoE families' config.json files differ (the rest — counts, sparse step — is read alike). */
export interface ExpertConfigRules {
  /** The key of each expert's FFN width: moe_intermediate_size (Qwen3-MoE), or intermediate_size (Mixtral: no dense layers). */
  readonly hfWidthKey: 'moe_intermediate_size' | 'intermediate_size';
  /** Top-k routing weights renormalised: always (Mixtral), or as config norm_topk_prob says (default false, as transformers). */
  readonly normTopkProb: 'always' | 'config';
  /** The key of a shared dense expert's width, for families that may have one (GraniteMoeShared: shared_intermediate_size; 0 or absent: none). */
  readonly hfSharedWidthKey?: 'shared_intermediate_size';
}

/** A GGUF file's metadata and small tensors, as ArchitectureModule.ggufConfig reads them. */
export interface GgufConfigReader {
  /** general.architecture: the prefix of the family's keys. */
  readonly arch: string;
  /** `<arch>.<key>` as a number (a per-layer array whose entries agree reads as one; of ggufPerLayerKeys, the largest entry), undefined when absent. */
  num(key: string): number | undefined;
  /** `<arch>.<key>` as stored (arrays, strings, booleans), undefined when absent. */
  value(key: string): unknown;
  /** Whether the file holds the tensor (llama.cpp's name). */
  hasTensor(name: string): boolean;
  /** A tensor's values as f32 (llama.cpp's name), undefined when absent. */
  tensor(name: string): Float32Array | undefined;
}
