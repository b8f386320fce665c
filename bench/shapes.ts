// Model shapes the benchmark generates checkpoints for, and the tensor list each shape implies
// (Hugging Face names, row-major shapes) in the order the files store them.

export type ShapeFamily = 'qwen3' | 'llama' | 'qwen3moe' | 'qwen35';

/** The sparse FFN of a mixture-of-experts shape (Qwen3-MoE: every layer routed, no shared expert). */
export interface MoeShape {
  numExperts: number;
  /** Experts each token is routed to (top-k). */
  numExpertsPerTok: number;
  /** Intermediate width of one expert's SwiGLU. */
  moeIntermediateSize: number;
  /** Whether the top-k routing weights are renormalized to sum to 1 (llama.cpp's qwen3moe always does). */
  normTopkProb: boolean;
  /** Every how many layers is sparse (1: all of them). */
  decoderSparseStep: number;
}

/**
 * The hybrid layout of a Qwen3.5 shape: Gated DeltaNet linear-attention layers with every
 * fullAttentionInterval-th layer gated full attention (transformers' layer_types default).
 */
export interface HybridShape {
  /** Every how many layers is full attention (4: three linear, then one full). */
  fullAttentionInterval: number;
  linearNumKeyHeads: number;
  linearNumValueHeads: number;
  linearKeyHeadDim: number;
  linearValueHeadDim: number;
  linearConvKernelDim: number;
  /** Full attention rotates the first headDim · this values of each head. */
  partialRotaryFactor: number;
  /** M-RoPE sections (text positions make it plain RoPE); they sum to the rotary dimension ÷ 2. */
  mropeSection: number[];
}

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
  /** Dense FFN width; for a MoE shape the (unused: every layer is sparse) dense width the config declares. */
  intermediateSize: number;
  vocabSize: number;
  ropeTheta: number;
  rmsNormEps: number;
  maxPositionEmbeddings: number;
  /** Present on MoE shapes only (so dense shapes' cache keys are unchanged). */
  moe?: MoeShape;
  /** Present on hybrid (Qwen3.5) shapes only. */
  hybrid?: HybridShape;
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
  // Llama-3.1-8B's layout (with the Qwen2.5 vocabulary every shape embeds): the size people run on a
  // machine like this one. Not in the default set (a Q4_K_M file is 4.6 GiB); it measures load time and
  // peak load RSS where the fixed overhead of the process is a small part of the file.
  llama8b: {
    id: 'llama8b',
    name: 'svc-bench Llama-3.1-8B shape (random weights)',
    family: 'llama',
    hiddenSize: 4096,
    numLayers: 32,
    numHeads: 32,
    numKvHeads: 8,
    headDim: 128,
    intermediateSize: 14336,
    vocabSize: QWEN_VOCAB,
    ropeTheta: 5e5,
    rmsNormEps: 1e-5,
    maxPositionEmbeddings: 131072,
  },
  // A small Qwen3-MoE (Qwen3-30B-A3B's layout at a fraction of its size) that fits this 24 GiB,
  // 2-core machine: 2.7 B parameters, 0.58 B active per token. In Q8_0 the file is 2.7 GiB and a
  // decode step reads 0.58 GiB (attention 0.12, embedding as LM head 0.15, 8 of 64 experts 0.30,
  // router F32 6 MiB), so it is memory-bound and the total/active gap (4.6×) is what expert
  // routing must turn into speed. 24 layers keep generation to minutes.
  qwen3moe: {
    id: 'qwen3moe',
    name: 'svc-bench Qwen3-MoE shape (random weights)',
    family: 'qwen3moe',
    hiddenSize: 1024,
    numLayers: 24,
    numHeads: 16,
    numKvHeads: 4,
    headDim: 128,
    // Qwen3-30B-A3B declares intermediate_size = top-k × moe_intermediate_size (6144 = 8 × 768).
    intermediateSize: 4096,
    vocabSize: QWEN_VOCAB,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
    maxPositionEmbeddings: 40960,
    moe: { numExperts: 64, numExpertsPerTok: 8, moeIntermediateSize: 512, normTopkProb: true, decoderSparseStep: 1 },
  },
  // A small Qwen3.5 (Qwen3.5-0.8B's text layout with Qwen2.5's vocabulary and a 3072 FFN): 24 layers,
  // three Gated DeltaNet layers to one gated full-attention layer, so 6 layers keep a KV cache and 18 a
  // fixed-size recurrent state. Safetensors only: svc reads Qwen3.5 from Hugging Face directories.
  qwen35: {
    id: 'qwen35',
    name: 'svc-bench Qwen3.5 shape (random weights)',
    family: 'qwen35',
    hiddenSize: 1024,
    numLayers: 24,
    numHeads: 8,
    numKvHeads: 2,
    headDim: 256,
    intermediateSize: 3072,
    vocabSize: QWEN_VOCAB,
    ropeTheta: 1e7,
    rmsNormEps: 1e-6,
    maxPositionEmbeddings: 262144,
    hybrid: {
      fullAttentionInterval: 4,
      linearNumKeyHeads: 16,
      linearNumValueHeads: 16,
      linearKeyHeadDim: 128,
      linearValueHeadDim: 128,
      linearConvKernelDim: 4,
      partialRotaryFactor: 0.25,
      mropeSection: [11, 11, 10],
    },
  },
};

/** Shapes svc reads only from a Hugging Face directory (bf16): no GGUF is written for them. */
export const HF_ONLY_SHAPE_IDS = ['qwen35'];

/** Shapes the dense benchmark (run.js) and a plain gen-checkpoints run cover by default. */
export const DEFAULT_SHAPE_IDS = ['qwen3', 'llama'];

/** The tiny dense layout: two layers of 256, 4 heads over 2 KV heads. */
const TINY_DENSE = { hiddenSize: 256, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 512 };

// Tiny versions for tests: same families and quirks (Qwen3's heads·head_dim ≠ hidden, GQA),
// every row a whole number of 256-element K-quant blocks. The vocabulary stays full size.
const SMALL: Record<string, ModelShape> = {
  qwen3: { ...FULL.qwen3, name: 'svc-bench tiny Qwen3 shape (random weights)', ...TINY_DENSE, headDim: 128 },
  llama: { ...FULL.llama, name: 'svc-bench tiny Llama shape (random weights)', ...TINY_DENSE, headDim: 64 },
  llama8b: { ...FULL.llama8b, name: 'svc-bench tiny Llama-3.1-8B shape (random weights)', ...TINY_DENSE, headDim: 128 },
  // 16 experts, not 8: llama-quantize treats n_expert == 8 as Mixtral (attn_v/attn_k Q8_0), and the
  // tiny shape should take the full shape's recipe.
  qwen3moe: {
    ...FULL.qwen3moe,
    name: 'svc-bench tiny Qwen3-MoE shape (random weights)',
    hiddenSize: 256,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 1,
    headDim: 128,
    intermediateSize: 1024,
    moe: { ...FULL.qwen3moe.moe!, numExperts: 16, numExpertsPerTok: 4, moeIntermediateSize: 256 },
  },
  // Four layers: three linear attention, one full; grouped v heads (2 key heads, 4 value heads).
  qwen35: {
    ...FULL.qwen35,
    name: 'svc-bench tiny Qwen3.5 shape (random weights)',
    hiddenSize: 256,
    numLayers: 4,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 128,
    intermediateSize: 512,
    hybrid: {
      ...FULL.qwen35.hybrid!,
      linearNumKeyHeads: 2,
      linearNumValueHeads: 4,
      linearKeyHeadDim: 64,
      linearValueHeadDim: 64,
      mropeSection: [6, 5, 5],
    },
  },
};

export const SHAPE_IDS = Object.keys(FULL);

export function shapeOf(id: string, small: boolean): ModelShape {
  const shape = (small ? SMALL : FULL)[id];
  if (!shape) throw new Error(`unknown model shape "${id}" (known: ${SHAPE_IDS.join(', ')})`);
  return shape;
}

/**
 * What a tensor's values are: matrices (embedding, linear, router) bell-shaped with std 0.02; `norm`
 * all 1; `centredNorm` all 0 (Qwen3.5 stores its RMSNorm weights zero-centred and scales by 1 + w);
 * `conv` a depthwise conv1d kernel, bell-shaped with std 1/√kernel; `aLog` Gated DeltaNet's A_log,
 * log(uniform(1, 16)); `dtBias` its dt_bias, all 1 (transformers' initial values for the last two).
 */
export type TensorRole = 'embedding' | 'linear' | 'norm' | 'router' | 'centredNorm' | 'conv' | 'aLog' | 'dtBias';

/** Where an expert stack's hfName holds the expert index. */
export const EXPERT_SLOT = '{expert}';

export interface TensorSpec {
  /**
   * Hugging Face name (also the seed of its random values). For an expert stack it holds
   * EXPERT_SLOT: HF stores each expert as its own tensor (expertSpecs).
   */
  hfName: string;
  /** llama.cpp GGUF name. */
  ggufName: string;
  /**
   * Row-major shape, outermost first: [rows, cols] for matrices, [n] for norms, [experts, rows, cols]
   * for an expert stack, [channels, 1, kernel] for a conv1d kernel (a row per channel).
   */
  shape: number[];
  role: TensorRole;
  /** For llama-arch GGUF: heads whose Q/K rows llama.cpp's converter interleaves (0 = none). */
  permuteHeads: number;
  /** Transformer layer the tensor belongs to; -1 for the embedding and the final norm. */
  layer: number;
  /** Experts stacked in the tensor (GGUF's 3-D *_exps); 0 for an ordinary tensor. */
  experts: number;
}

/** Whether layer `l` of a hybrid shape is full attention (transformers' default layer_types). */
export function isFullAttentionLayer(s: ModelShape, l: number): boolean {
  return !s.hybrid || (l + 1) % s.hybrid.fullAttentionInterval === 0;
}

/** config.json's layer_types of a hybrid shape. */
export function layerTypesOf(s: ModelShape): string[] {
  return Array.from({ length: s.numLayers }, (_, l) => (isFullAttentionLayer(s, l) ? 'full_attention' : 'linear_attention'));
}

/** All tensors of a shape with tied embeddings (no lm_head / output.weight), in GGUF file order. */
export function tensorSpecs(s: ModelShape): TensorSpec[] {
  if (s.family === 'qwen35') return qwen35TensorSpecs(s);
  const h = s.hiddenSize;
  const q = s.numHeads * s.headDim;
  const kv = s.numKvHeads * s.headDim;
  const llama = s.family === 'llama';
  const base = { permuteHeads: 0, layer: -1, experts: 0 };
  const out: TensorSpec[] = [
    { ...base, hfName: 'model.embed_tokens.weight', ggufName: 'token_embd.weight', shape: [s.vocabSize, h], role: 'embedding' },
    { ...base, hfName: 'model.norm.weight', ggufName: 'output_norm.weight', shape: [h], role: 'norm' },
  ];
  for (let l = 0; l < s.numLayers; l++) {
    const hf = (part: string) => `model.layers.${l}.${part}.weight`;
    const gg = (part: string) => `blk.${l}.${part}.weight`;
    const add = (hfPart: string, ggPart: string, shape: number[], role: TensorRole, permuteHeads = 0) =>
      out.push({ hfName: hf(hfPart), ggufName: gg(ggPart), shape, role, permuteHeads, layer: l, experts: 0 });
    add('input_layernorm', 'attn_norm', [h], 'norm');
    add('self_attn.q_proj', 'attn_q', [q, h], 'linear', llama ? s.numHeads : 0);
    add('self_attn.k_proj', 'attn_k', [kv, h], 'linear', llama ? s.numKvHeads : 0);
    add('self_attn.v_proj', 'attn_v', [kv, h], 'linear');
    add('self_attn.o_proj', 'attn_output', [h, q], 'linear');
    if (!llama) {
      add('self_attn.q_norm', 'attn_q_norm', [s.headDim], 'norm');
      add('self_attn.k_norm', 'attn_k_norm', [s.headDim], 'norm');
    }
    add('post_attention_layernorm', 'ffn_norm', [h], 'norm');
    // transformers' rule: layer l is sparse when (l + 1) % decoder_sparse_step == 0 (mlp_only_layers is empty).
    if (s.moe && (l + 1) % s.moe.decoderSparseStep === 0) {
      const { numExperts: e, moeIntermediateSize: f } = s.moe;
      add('mlp.gate', 'ffn_gate_inp', [e, h], 'router');
      // llama.cpp stacks the experts of a projection into one 3-D tensor, ne = [cols, rows, experts].
      const stack = (proj: string, ggPart: string, shape: number[]) =>
        out.push({
          hfName: hf(`mlp.experts.${EXPERT_SLOT}.${proj}`),
          ggufName: gg(ggPart),
          shape,
          role: 'linear',
          permuteHeads: 0,
          layer: l,
          experts: e,
        });
      stack('gate_proj', 'ffn_gate_exps', [e, f, h]);
      stack('up_proj', 'ffn_up_exps', [e, f, h]);
      stack('down_proj', 'ffn_down_exps', [e, h, f]);
    } else {
      add('mlp.gate_proj', 'ffn_gate', [s.intermediateSize, h], 'linear');
      add('mlp.up_proj', 'ffn_up', [s.intermediateSize, h], 'linear');
      add('mlp.down_proj', 'ffn_down', [h, s.intermediateSize], 'linear');
    }
  }
  return out;
}

/**
 * Qwen3.5's text model (transformers' Qwen3_5ForCausalLM names): per layer a Gated DeltaNet
 * (linear_attn.*) or gated full attention (self_attn.*, q_proj holding each head's query and output
 * gate), then a SwiGLU MLP. Its RMSNorms are zero-centred (centredNorm) but for the DeltaNet's gated
 * norm. The GGUF names follow llama.cpp's qwen3next tensors; no GGUF is written for this family
 * (HF_ONLY_SHAPE_IDS), they only name the tensors for the byte counts.
 */
function qwen35TensorSpecs(s: ModelShape): TensorSpec[] {
  const hy = s.hybrid;
  if (!hy) throw new Error(`shape ${s.id}: family qwen35 without hybrid settings`);
  const h = s.hiddenSize;
  const q = s.numHeads * s.headDim;
  const kv = s.numKvHeads * s.headDim;
  const key = hy.linearNumKeyHeads * hy.linearKeyHeadDim;
  const value = hy.linearNumValueHeads * hy.linearValueHeadDim;
  const conv = 2 * key + value;
  const nv = hy.linearNumValueHeads;
  const base = { permuteHeads: 0, layer: -1, experts: 0 };
  const out: TensorSpec[] = [
    { ...base, hfName: 'model.embed_tokens.weight', ggufName: 'token_embd.weight', shape: [s.vocabSize, h], role: 'embedding' },
    { ...base, hfName: 'model.norm.weight', ggufName: 'output_norm.weight', shape: [h], role: 'centredNorm' },
  ];
  for (let l = 0; l < s.numLayers; l++) {
    // hfPart / ggPart in full: A_log and dt_bias have no .weight suffix.
    const add = (hfPart: string, ggPart: string, shape: number[], role: TensorRole) =>
      out.push({ ...base, hfName: `model.layers.${l}.${hfPart}`, ggufName: `blk.${l}.${ggPart}`, shape, role, layer: l });
    add('input_layernorm.weight', 'attn_norm.weight', [h], 'centredNorm');
    if (isFullAttentionLayer(s, l)) {
      add('self_attn.q_proj.weight', 'attn_q.weight', [2 * q, h], 'linear');
      add('self_attn.k_proj.weight', 'attn_k.weight', [kv, h], 'linear');
      add('self_attn.v_proj.weight', 'attn_v.weight', [kv, h], 'linear');
      add('self_attn.o_proj.weight', 'attn_output.weight', [h, q], 'linear');
      add('self_attn.q_norm.weight', 'attn_q_norm.weight', [s.headDim], 'centredNorm');
      add('self_attn.k_norm.weight', 'attn_k_norm.weight', [s.headDim], 'centredNorm');
    } else {
      add('linear_attn.in_proj_qkv.weight', 'attn_qkv.weight', [conv, h], 'linear');
      add('linear_attn.in_proj_z.weight', 'attn_gate.weight', [value, h], 'linear');
      add('linear_attn.in_proj_b.weight', 'ssm_beta.weight', [nv, h], 'linear');
      add('linear_attn.in_proj_a.weight', 'ssm_alpha.weight', [nv, h], 'linear');
      add('linear_attn.conv1d.weight', 'ssm_conv1d.weight', [conv, 1, hy.linearConvKernelDim], 'conv');
      add('linear_attn.dt_bias', 'ssm_dt.bias', [nv], 'dtBias');
      add('linear_attn.A_log', 'ssm_a', [nv], 'aLog');
      add('linear_attn.norm.weight', 'ssm_norm.weight', [hy.linearValueHeadDim], 'norm');
      add('linear_attn.out_proj.weight', 'ssm_out.weight', [h, value], 'linear');
    }
    add('post_attention_layernorm.weight', 'post_attention_norm.weight', [h], 'centredNorm');
    add('mlp.gate_proj.weight', 'ffn_gate.weight', [s.intermediateSize, h], 'linear');
    add('mlp.up_proj.weight', 'ffn_up.weight', [s.intermediateSize, h], 'linear');
    add('mlp.down_proj.weight', 'ffn_down.weight', [h, s.intermediateSize], 'linear');
  }
  return out;
}

/** An expert stack as the per-expert 2-D tensors HF stores (mlp.experts.M.*); any other spec as itself. */
export function expertSpecs(spec: TensorSpec): TensorSpec[] {
  if (!spec.experts) return [spec];
  return Array.from({ length: spec.experts }, (_, m) => ({
    ...spec,
    hfName: spec.hfName.replace(EXPERT_SLOT, String(m)),
    shape: spec.shape.slice(1),
    experts: 0,
  }));
}

/** The tensors of the Hugging Face checkpoint, in file order: every expert stack split per expert. */
export function hfTensorSpecs(s: ModelShape): TensorSpec[] {
  return tensorSpecs(s).flatMap(expertSpecs);
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
  switch (s.family) {
    case 'qwen35': {
      const hy = s.hybrid;
      if (!hy) throw new Error(`shape ${s.id}: family qwen35 without hybrid settings`);
      // transformers' Qwen3_5TextConfig, text only (model_type qwen3_5_text); rope as transformers 5
      // writes it, under rope_parameters (rope_theta also at the top level, as `common` has it).
      return {
        architectures: ['Qwen3_5ForCausalLM'],
        model_type: 'qwen3_5_text',
        ...common,
        layer_types: layerTypesOf(s),
        full_attention_interval: hy.fullAttentionInterval,
        linear_conv_kernel_dim: hy.linearConvKernelDim,
        linear_key_head_dim: hy.linearKeyHeadDim,
        linear_value_head_dim: hy.linearValueHeadDim,
        linear_num_key_heads: hy.linearNumKeyHeads,
        linear_num_value_heads: hy.linearNumValueHeads,
        partial_rotary_factor: hy.partialRotaryFactor,
        rope_parameters: {
          rope_type: 'default',
          rope_theta: s.ropeTheta,
          partial_rotary_factor: hy.partialRotaryFactor,
          mrope_interleaved: true,
          mrope_section: hy.mropeSection,
        },
      };
    }
    case 'qwen3':
      return { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', ...common, use_sliding_window: false };
    case 'llama':
      return { architectures: ['LlamaForCausalLM'], model_type: 'llama', ...common, mlp_bias: false };
    case 'qwen3moe': {
      if (!s.moe) throw new Error(`shape ${s.id}: family qwen3moe without moe settings`);
      return {
        architectures: ['Qwen3MoeForCausalLM'],
        model_type: 'qwen3_moe',
        ...common,
        use_sliding_window: false,
        num_experts: s.moe.numExperts,
        num_experts_per_tok: s.moe.numExpertsPerTok,
        moe_intermediate_size: s.moe.moeIntermediateSize,
        norm_topk_prob: s.moe.normTopkProb,
        decoder_sparse_step: s.moe.decoderSparseStep,
        mlp_only_layers: [],
        // transformers' defaults, written so a reader need not know them.
        output_router_logits: false,
        router_aux_loss_coef: 0.001,
      };
    }
  }
}
