// Model shapes the benchmark generates checkpoints for, and the tensor list each shape implies
// (Hugging Face names, row-major shapes) in the order the files store them.

export type ShapeFamily = 'qwen3' | 'llama';

export interface ModelShape {
  /** Short id used on the command line and in file names: qwen3, llama. */
  id: string;
  /** Human name, written as general.name / _name_or_path. */
  name: string;
  family: ShapeFamily;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  maxPositionEmbeddings: number;
}

/** Every shape uses the real Qwen2.5 vocabulary size, since that is the tokenizer embedded. */
const QWEN_VOCAB = 151936;

const FULL: Record<string, ModelShape> = {
  qwen3: {
    id: 'qwen3',
    name: 'svc-bench Qwen3-0.6B shape (random weights)',
    family: 'qwen3',
    hiddenSize: 1024,
    numLayers: 28,
    numHeads: 16,
    numKvHeads: 8,
    headDim: 128,
    intermediateSize: 3072,
    vocabSize: QWEN_VOCAB,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
    maxPositionEmbeddings: 40960,
  },
  llama: {
    id: 'llama',
    name: 'svc-bench Llama-3.2-1B shape (random weights)',
    family: 'llama',
    hiddenSize: 2048,
    numLayers: 16,
    numHeads: 32,
    numKvHeads: 8,
    headDim: 64,
    intermediateSize: 8192,
    vocabSize: QWEN_VOCAB,
    ropeTheta: 5e5,
    rmsNormEps: 1e-5,
    maxPositionEmbeddings: 131072,
  },
};

// Tiny versions for tests: same families and quirks (Qwen3's heads·head_dim ≠ hidden, GQA),
// every row a whole number of 256-element K-quant blocks. The vocabulary stays full size.
const SMALL: Record<string, ModelShape> = {
  qwen3: {
    ...FULL.qwen3,
    name: 'svc-bench tiny Qwen3 shape (random weights)',
    hiddenSize: 256,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 128,
    intermediateSize: 512,
  },
  llama: {
    ...FULL.llama,
    name: 'svc-bench tiny Llama shape (random weights)',
    hiddenSize: 256,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 64,
    intermediateSize: 512,
  },
};

export const SHAPE_IDS = Object.keys(FULL);

export function shapeOf(id: string, small: boolean): ModelShape {
  const shape = (small ? SMALL : FULL)[id];
  if (!shape) throw new Error(`unknown model shape "${id}" (known: ${SHAPE_IDS.join(', ')})`);
  return shape;
}

export type TensorRole = 'embedding' | 'linear' | 'norm';

export interface TensorSpec {
  /** Hugging Face name (also the seed of its random values). */
  hfName: string;
  /** llama.cpp GGUF name. */
  ggufName: string;
  /** Row-major shape, outermost first: [rows, cols] for matrices, [n] for norms. */
  shape: number[];
  role: TensorRole;
  /** For llama-arch GGUF: heads whose Q/K rows llama.cpp's converter interleaves (0 = none). */
  permuteHeads: number;
  /** Transformer layer the tensor belongs to; -1 for the embedding and the final norm. */
  layer: number;
}

/** All tensors of a shape with tied embeddings (no lm_head / output.weight), in file order. */
export function tensorSpecs(s: ModelShape): TensorSpec[] {
  const h = s.hiddenSize;
  const q = s.numHeads * s.headDim;
  const kv = s.numKvHeads * s.headDim;
  const llama = s.family === 'llama';
  const out: TensorSpec[] = [
    {
      hfName: 'model.embed_tokens.weight',
      ggufName: 'token_embd.weight',
      shape: [s.vocabSize, h],
      role: 'embedding',
      permuteHeads: 0,
      layer: -1,
    },
    { hfName: 'model.norm.weight', ggufName: 'output_norm.weight', shape: [h], role: 'norm', permuteHeads: 0, layer: -1 },
  ];
  for (let l = 0; l < s.numLayers; l++) {
    const hf = (part: string) => `model.layers.${l}.${part}.weight`;
    const gg = (part: string) => `blk.${l}.${part}.weight`;
    const add = (hfPart: string, ggPart: string, shape: number[], role: TensorRole, permuteHeads = 0) =>
      out.push({ hfName: hf(hfPart), ggufName: gg(ggPart), shape, role, permuteHeads, layer: l });
    add('input_layernorm', 'attn_norm', [h], 'norm');
    add('self_attn.q_proj', 'attn_q', [q, h], 'linear', llama ? s.numHeads : 0);
    add('self_attn.k_proj', 'attn_k', [kv, h], 'linear', llama ? s.numKvHeads : 0);
    add('self_attn.v_proj', 'attn_v', [kv, h], 'linear');
    add('self_attn.o_proj', 'attn_output', [h, q], 'linear');
    if (s.family === 'qwen3') {
      add('self_attn.q_norm', 'attn_q_norm', [s.headDim], 'norm');
      add('self_attn.k_norm', 'attn_k_norm', [s.headDim], 'norm');
    }
    add('post_attention_layernorm', 'ffn_norm', [h], 'norm');
    add('mlp.gate_proj', 'ffn_gate', [s.intermediateSize, h], 'linear');
    add('mlp.up_proj', 'ffn_up', [s.intermediateSize, h], 'linear');
    add('mlp.down_proj', 'ffn_down', [h, s.intermediateSize], 'linear');
  }
  return out;
}

/** config.json of the shape, as transformers would write it for a tied-embedding checkpoint. */
export function hfConfig(s: ModelShape, bosId: number, eosId: number): Record<string, unknown> {
  const common = {
    _name_or_path: s.name,
    hidden_size: s.hiddenSize,
    intermediate_size: s.intermediateSize,
    num_hidden_layers: s.numLayers,
    num_attention_heads: s.numHeads,
    num_key_value_heads: s.numKvHeads,
    head_dim: s.headDim,
    vocab_size: s.vocabSize,
    rope_theta: s.ropeTheta,
    rms_norm_eps: s.rmsNormEps,
    max_position_embeddings: s.maxPositionEmbeddings,
    tie_word_embeddings: true,
    hidden_act: 'silu',
    attention_bias: false,
    bos_token_id: bosId,
    eos_token_id: eosId,
    torch_dtype: 'bfloat16',
  };
  return s.family === 'qwen3'
    ? { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', ...common, use_sliding_window: false }
    : { architectures: ['LlamaForCausalLM'], model_type: 'llama', ...common, mlp_bias: false };
}
