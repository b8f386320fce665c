// Shared model-side types: tensors as loaded, the normalized model config, a loaded checkpoint.

import type { DType } from '../kernels/dtypes.js';
import type { PackedLayout, WeightMatrix } from '../kernels/ops.js';

/** Storage types of weight tensors: the kernels' weight dtypes (src/kernels/dtypes.ts). */
export type { DType } from '../kernels/dtypes.js';

/**
 * A weight tensor as loaded. `shape` is row-major, outermost first, as Hugging Face writes it
 * (a linear weight is [out_features, in_features]); GGUF tensors are converted to this order.
 * `data` holds the raw bytes in `dtype`'s layout: one row = shape[last] elements.
 */
export interface Tensor {
  name: string;
  dtype: DType;
  shape: number[];
  data: Uint8Array;
}

/** Model hyper-parameters, normalized from config.json or GGUF metadata. */
export interface ModelConfig {
  /** The architecture that runs it: a row name of ARCHITECTURES (src/model/architectures/index.ts). */
  architecture: string;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  tieWordEmbeddings: boolean;
  /** Mistral-style sliding window in tokens; null = full attention. */
  slidingWindow: number | null;
  /** Bias on q/k/v projections (Qwen2). */
  attentionBias: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** config `_name_or_path` (or GGUF general.name) when present. */
  nameOrPath: string | null;
  /**
   * config `num_nextn_predict_layers` (DeepSeek-V3 / GLM-4.5 style): multi-token-prediction layers
   * stored after the main ones, as model.layers.{numLayers + i}.*; absent when the config has none.
   */
  numMtpLayers?: number;
  /** Mixture of experts: routed experts per MoE layer (config num_experts / num_local_experts, GGUF expert_count); absent for dense models. */
  numExperts?: number;
  /** MoE: experts each token is routed to (num_experts_per_tok, GGUF expert_used_count). */
  numExpertsPerTok?: number;
  /** MoE: each expert's FFN width (moe_intermediate_size; Mixtral's intermediate_size; GGUF expert_feed_forward_length). */
  moeIntermediateSize?: number;
  /** MoE: the top-k routing weights are renormalised to sum to 1 (norm_topk_prob; Mixtral and llama.cpp always). */
  normTopkProb?: boolean;
  /**
   * MoE: per layer, whether its feed-forward block is the routed experts (else the dense MLP of
   * intermediateSize): Qwen3-MoE's decoder_sparse_step and mlp_only_layers; every layer otherwise.
   */
  moeLayers?: boolean[];
  /**
   * Multimodal RoPE (Qwen2-VL, config rope_scaling / rope_parameters `mrope_section`): how many of
   * the headDim / 2 rotary frequencies follow the temporal, height and width positions, in that
   * order. Absent for text-only families.
   */
  mropeSection?: number[];
  /**
   * Partial rotary embeddings (Phi-3's, Qwen3.5's partial_rotary_factor): only the first rotaryDim elements of
   * each head rotate, paired within them. Absent: the whole head (headDim).
   */
  rotaryDim?: number;
  /** LongRoPE (Phi-3 rope_scaling / rope_parameters with rope_type (or type) longrope); absent otherwise. */
  longRope?: LongRopeConfig;
  /** Granite: embeddings multiplied by this (embedding_multiplier); absent for other families. */
  embeddingMultiplier?: number;
  /** Granite: each sublayer's output multiplied by this before its residual add (residual_multiplier). */
  residualMultiplier?: number;
  /** Granite: the attention softmax scale (attention_multiplier), in place of headDim^-0.5. */
  attentionMultiplier?: number;
  /** Granite: logits divided by this (logits_scaling). */
  logitsScaling?: number;
  /**
   * MoE with a shared dense expert beside the routed ones: its width (GraniteMoeShared's
   * shared_intermediate_size, added to the routed output; Qwen3.5-MoE's shared_expert_intermediate_size,
   * gated per token by its shared_expert_gate).
   */
  sharedExpertIntermediateSize?: number;
  /**
   * Gemma 2 / 3: per layer, whether it attends through the sliding window ('sliding') or to the whole
   * sequence ('full') (config layer_types, else the family's default pattern). Absent: slidingWindow
   * applies to every layer alike.
   */
  layerAttention?: ('sliding' | 'full')[];
  /** YaRN RoPE scaling (rope_scaling / rope_parameters rope_type 'yarn'; GPT-OSS reads it: architectures/yarn.ts). */
  yarnRope?: YarnRopeConfig;
  /** GPT-OSS: the experts' clamped SwiGLU limit (swiglu_limit, 7). */
  swigluLimit?: number;
  /** Gemma: the softmax scale is queryPreAttnScalar^-0.5 (config query_pre_attn_scalar) instead of headDim^-0.5. */
  queryPreAttnScalar?: number;
  /** Gemma 2: attention scores soft-capped at this value (attn_logit_softcapping); absent: none. */
  attnLogitSoftcapping?: number;
  /** Gemma 2: final logits soft-capped at this value (final_logit_softcapping); absent: none. */
  finalLogitSoftcapping?: number;
  /** Gemma 3: RoPE base of the sliding-window layers (rope_local_base_freq); ropeTheta is the global layers'. */
  ropeLocalTheta?: number;
  /** Linear RoPE scaling factor (rope_scaling {rope_type: linear}) of the global layers (Gemma 3); absent: 1. */
  ropeLinearFactor?: number;
  /** The MLP's activation when it is not SwiGLU's silu: a GELU (Gemma's hidden_activation gelu_pytorch_tanh is 'tanh'). */
  mlpGelu?: 'erf' | 'tanh';
  /**
   * Vision-language wrappers (LLaVA): the ARCHITECTURES row of text_config's family, which runs the
   * language model; absent for text-only models.
   */
  textArchitecture?: string;
  /**
   * Vision-language models (LLaVA; Qwen2-VL when config.json has a vision_config): config.json as
   * read, whose vision_config and projector keys the vision encoder (src/model/vision/) parses;
   * absent for text-only models.
   */
  visionHfConfig?: Readonly<Record<string, unknown>>;
  /**
   * Hybrid models (Qwen3.5): per layer, full attention over the paged KV cache or a recurrent
   * linear-attention layer (config `layer_types`). Recurrent layers keep their state in the model's
   * RecurrentState (architectures/model.ts), not in the KV cache: allocateKvCache gives them empty
   * KV storage and kvBytesPerToken counts only attention layers. Absent: every layer is attention.
   */
  layerTypes?: LayerType[];
  /** Gated DeltaNet layers' shapes (Qwen3.5 linear_*): present when some layer is linear_attention. */
  linearAttention?: LinearAttentionConfig;
  /**
   * Multi-head latent attention (DeepSeek-V2): its shapes. Present for MLA models, whose KV cache holds
   * per token and layer one latent row of kvLoraRank + qkRopeHeadDim values (allocateKvCache: one KV
   * head of that width, no V side) instead of per-head keys and values.
   */
  mla?: MlaConfig;
  /** DeepSeek-V2 MoE routing where it differs from plain top-k: group-limited greedy and the routed weights' scale. */
  moeRouting?: MoeRoutingConfig;
  /** Mamba2 mixer shapes (Mamba2, Nemotron-H): present when some layer is 'mamba'. */
  ssm?: SsmConfig;
  /** Nemotron-H's MoE routing (sigmoid scores, correction bias, group-limited top-k, scaling) and shared expert. */
  sigmoidRouting?: SigmoidRoutingConfig;
}

/** DeepSeek-V2's attention shapes (config.json kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim). */
export interface MlaConfig {
  kvLoraRank: number;
  /** null: q is one q_proj; else q_a_proj → q_a_layernorm → q_b_proj through this rank. */
  qLoraRank: number | null;
  qkNopeHeadDim: number;
  qkRopeHeadDim: number;
  vHeadDim: number;
  /** The softmax scale: (qkNope + qkRope)^-0.5, times YaRN's mscale(factor, mscale_all_dim)² when set (DeepSeek's code; not transformers 5's). */
  softmaxScale: number;
  /** YaRN (rope_scaling type yarn) of the rope part; absent: plain RoPE. */
  yarn?: YarnConfig;
}

/** YaRN's parameters as transformers' _compute_yarn_parameters reads them (architectures/yarn.ts). */
export interface YarnConfig {
  factor: number;
  originalMaxPositionEmbeddings: number;
  betaFast: number;
  betaSlow: number;
  /** cos and sin multiplied by this: attention_factor, else mscale(factor, mscale) / mscale(factor, mscale_all_dim), else mscale(factor). */
  attentionFactor: number;
  /** rope_scaling truncate (default true): the correction range is floored / ceiled to whole dimensions. */
  truncate: boolean;
}

/** How a MoE layer picks and weighs its experts beyond top-k over the softmax (DeepSeek-V2). */
export interface MoeRoutingConfig {
  /** Routed weights multiplied by this (routed_scaling_factor) when they are not renormalised. */
  scale: number;
  /** group_limited_greedy: experts in numGroups equal groups; only the topkGroups groups of highest max probability compete. */
  groups?: { numGroups: number; topkGroups: number };
}

/**
 * What a layer is in a hybrid stack (ModelConfig.layerTypes): attention over the paged KV cache
 * ('full_attention'), a recurrent layer with per-sequence state ('linear_attention': Gated DeltaNet;
 * 'mamba': a Mamba2 mixer), or a feed-forward-only layer (Nemotron-H's 'mlp' and 'moe' blocks).
 * Only attention layers hold KV (usesKvCache).
 */
export type LayerType = 'full_attention' | 'linear_attention' | 'mamba' | 'mlp' | 'moe';

/** Mamba2 mixer shapes (transformers' Mamba2Config / NemotronHConfig). */
export interface SsmConfig {
  numHeads: number;
  headDim: number;
  /** d_state (state_size / ssm_state_size). */
  stateSize: number;
  nGroups: number;
  convKernel: number;
  /** The conv1d has a bias (use_conv_bias). */
  convBias: boolean;
  /** in_proj / out_proj have biases (use_bias). */
  projBias: boolean;
  /** dt clamp: [time_step_limit] for Mamba2; Nemotron-H's torch_forward clamps at time_step_min only. */
  dtMin: number;
  dtMax: number;
  /** The gated RMSNorm's group width: numHeads · headDim (Mamba2) or that / n_groups (Nemotron-H). */
  normGroupSize: number;
}

/** Nemotron-H's routed experts (n_routed_experts etc.): sigmoid router with e_score_correction_bias. */
export interface SigmoidRoutingConfig {
  numExperts: number;
  topK: number;
  /** n_group / topk_group: experts chosen among the best topk_group of n_group groups (each scored by its top-2 sum). */
  nGroup: number;
  topkGroup: number;
  normTopkProb: boolean;
  routedScalingFactor: number;
  /** moe_intermediate_size and the shared expert's width (moe_shared_expert_intermediate_size; 0: none). */
  expertWidth: number;
  sharedWidth: number;
}

/** Gated DeltaNet (linear attention) layer shapes, from config.json's linear_* keys. */
export interface LinearAttentionConfig {
  /** Causal conv1d width (linear_conv_kernel_dim). */
  convKernel: number;
  numKeyHeads: number;
  numValueHeads: number;
  keyHeadDim: number;
  valueHeadDim: number;
}

/**
 * LongRoPE's parameters (transformers' _compute_longrope_parameters): per-frequency divisors of the
 * rotary inverse frequencies, short_factor while a sequence is within originalMaxPositionEmbeddings
 * and long_factor beyond (see architectures/long-rope.ts for when svc switches), and the factor both
 * multiply cos and sin by.
 */
export interface LongRopeConfig {
  shortFactor: number[];
  longFactor: number[];
  originalMaxPositionEmbeddings: number;
  /** rope_scaling attention_factor, else √(1 + ln(max_position_embeddings / original) / ln(original)) (1 when that ratio ≤ 1). */
  attentionFactor: number;
}

/** Everything needed to run and talk to a model, as loaded from disk. */
export interface Checkpoint {
  /** Directory or .gguf file it came from. */
  source: string;
  format: 'safetensors' | 'gguf';
  config: ModelConfig;
  /** Tensors under Hugging Face names (model.layers.N.self_attn.q_proj.weight …). */
  tensors: Map<string, Tensor>;
  /** Raw GGUF metadata when format is gguf (tokenizer.chat_template …), less the tokenizer's large arrays. */
  ggufMetadata: Record<string, unknown> | null;
  /** Set by loaders whose tensors are views of a mapped file (GGUF): told as the model takes each tensor. */
  residency?: WeightResidency;
  /** The packed-weights cache of this file, when asked for (GGUF with fast load): see loaders/packed-cache.ts. */
  packedCache?: PackedWeightStore;
}

/**
 * Weights an earlier load packed (ops.packedLayout), under keys naming what they were made of (a
 * tensor's name, with the rows taken when only some were): the model takes them instead of
 * repacking, and reports the weights it prepared itself, for the cache to keep.
 */
export interface PackedWeightStore {
  /** The weight kept under `key`, or null (none, or one of another dtype, shape or layout). */
  take(key: string, dtype: DType, rows: number, cols: number, layout: PackedLayout): WeightMatrix | null;
  /** A weight the model prepared now from what `key` names; kept for the cache when the layout packed it. */
  record(key: string, w: WeightMatrix, layout: PackedLayout): void;
}

/**
 * The loader's side of building a model from mapped tensors: the model reports each tensor it has
 * turned into a weight, so the loader can drop the tensor's source pages (or fault them in for
 * good when the weight is used in place) and count progress.
 */
export interface WeightResidency {
  /** Bytes of tensor data the model may take (tied tensors counted once). */
  readonly totalBytes: number;
  /**
   * The model is done turning `tensor` into a weight. inPlace: the weight still reads tensor.data
   * (f32, K-quants multiplied as loaded); otherwise it lives in memory of its own (packed, decoded).
   * kept: the bytes [begin, end) of tensor.data the weight reads in place when it reads only part of
   * them (one rank's experts of a stacked expert tensor): the rest is released. Absent: all of it.
   */
  taken(tensor: Tensor, inPlace: boolean, kept?: { begin: number; end: number }): void;
}

/** How far a model load has got: tensors taken by the model, of those the file holds. */
export interface LoadProgress {
  tensors: number;
  totalTensors: number;
  bytes: number;
  totalBytes: number;
}

/** A YaRN RoPE parameter set as a config gives it (architectures/yarn.ts computes its frequencies). */
export interface YarnRopeConfig {
  readonly factor: number;
  readonly originalMaxPositionEmbeddings: number;
  /** Default 32 and 1 (transformers' `or 32` / `or 1`). */
  readonly betaFast: number;
  readonly betaSlow: number;
  /** Round the correction range outward to whole dims (default true). */
  readonly truncate: boolean;
  /** Given attention factor; absent: from mscale / mscale_all_dim, else 0.1·ln(factor) + 1. */
  readonly attentionFactor?: number;
  readonly mscale?: number;
  readonly mscaleAllDim?: number;
}
