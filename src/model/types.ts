// Shared model-side types: tensors as loaded, the normalized model config, a loaded checkpoint.

/** Storage types of weight tensors. Quantized ones use GGUF block layouts along each row. */
export type DType = 'f32' | 'f16' | 'bf16' | 'q8_0' | 'q4_0' | 'q2_k' | 'q4_k' | 'q5_k' | 'q6_k';

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

export type ArchitectureName = 'llama' | 'mistral' | 'qwen2' | 'qwen3' | 'smollm2';

/** Model hyper-parameters, normalized from config.json or GGUF metadata. */
export interface ModelConfig {
  architecture: ArchitectureName;
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
  /** Per-head RMSNorm on q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** config `_name_or_path` (or GGUF general.name) when present. */
  nameOrPath: string | null;
}

/** Everything needed to run and talk to a model, as loaded from disk. */
export interface Checkpoint {
  /** Directory or .gguf file it came from. */
  source: string;
  format: 'safetensors' | 'gguf';
  config: ModelConfig;
  /** Tensors under Hugging Face names (model.layers.N.self_attn.q_proj.weight …). */
  tensors: Map<string, Tensor>;
  /** Raw GGUF metadata when format is gguf (tokenizer.ggml.*, tokenizer.chat_template …). */
  ggufMetadata: Record<string, unknown> | null;
}
