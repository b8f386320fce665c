// llama.cpp tensor names → the Hugging Face names svc's architectures load, and the transformations
// convert_hf_to_gguf.py applied to a tensor's values or shape, undone here so every architecture
// sees its Hugging Face checkpoint's tensors whatever the file format (one place for both).
//
// Names: one table for the decoder families (LAYER_NAMES), and per GGUF `general.architecture` the
// parts that mean something else there (llama.cpp's `ffn_norm` is Llama's post_attention_layernorm
// but Gemma's pre_feedforward_layernorm; `ffn_up` is Phi-3's fused gate_up_proj).
// Transformations (`GgufTensorMapping.values` / `.shape`), each naming the converter code it undoes:
//   gemma2 / gemma3: every `*norm.weight` was stored + 1 (Gemma2Model / Gemma3Model.modify_tensors)
//   mamba2 / nemotron_h[_moe]: A_log stored as A = −exp(A_log) [nh, 1], D as [nh, 1], conv1d squeezed to
//     [channels, K], the gated norm as [n_group, inner / n_group] (Mamba2Model.modify_tensors; Nemotron-H's
//     class derives from it)
const TOP_LEVEL_NAMES: Record<string, string> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** blk.N.<part>.<weight|bias> → model.layers.N.<name>.<weight|bias>, for the decoder families. */
const LAYER_NAMES: Record<string, string> = {
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  attn_norm: 'input_layernorm',
  ffn_norm: 'post_attention_layernorm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
  // Mixture of experts: the router, and every expert's weights stacked [experts, rows, cols] in one
  // tensor, named as transformers 5 names its stacked experts (gate and up kept apart).
  ffn_gate_inp: 'mlp.gate',
};

/**
 * q, k and v rows in one tensor: Phi-3 always, the others under convert_hf_to_gguf.py --fuse-qkv. Only
 * for families whose Q/K rows are not interleaved (the loader un-interleaves attn_q / attn_k only).
 */
const FUSED_QKV: Record<string, string> = { 'attn_qkv.weight': 'self_attn.qkv_proj.weight', 'attn_qkv.bias': 'self_attn.qkv_proj.bias' };

/**
 * Per GGUF architecture: blk.N.<key> → model.layers.N.<value>, where <key> is the part with its
 * suffix (`ssm_dt.bias`) or the bare part for llama.cpp's suffix-less tensors (`ssm_a`, `ssm_d`).
 * Looked up before LAYER_NAMES.
 */
const ARCH_LAYER_NAMES: Record<string, Record<string, string>> = {
  // tensor_mapping.py: post_attention_layernorm → post_attention_norm, pre_feedforward_layernorm →
  // ffn_norm, post_feedforward_layernorm → post_ffw_norm.
  gemma2: {
    ...FUSED_QKV,
    'post_attention_norm.weight': 'post_attention_layernorm.weight',
    'ffn_norm.weight': 'pre_feedforward_layernorm.weight',
    'post_ffw_norm.weight': 'post_feedforward_layernorm.weight',
  },
  olmo2: {
    ...FUSED_QKV,
    'post_attention_norm.weight': 'post_attention_layernorm.weight',
    'post_ffw_norm.weight': 'post_feedforward_layernorm.weight',
  },
  // Phi-3's gate_up_proj is renamed ffn_up as it is (gate rows first): llama.cpp's fused SwiGLU.
  phi3: { ...FUSED_QKV, 'ffn_up.weight': 'mlp.gate_up_proj.weight' },
  mamba2: mambaNames(),
};
ARCH_LAYER_NAMES.gemma3 = ARCH_LAYER_NAMES.gemma2;

/** Mamba2 mixer tensors (tensor_mapping.py SSM_*), under `mixer.` as transformers names them; the block's norm is attn_norm. */
function mambaNames(): Record<string, string> {
  return {
    'attn_norm.weight': 'norm.weight',
    'ssm_in.weight': 'mixer.in_proj.weight',
    'ssm_in.bias': 'mixer.in_proj.bias',
    'ssm_conv1d.weight': 'mixer.conv1d.weight',
    'ssm_conv1d.bias': 'mixer.conv1d.bias',
    // Mamba2Model.filter_tensors renames dt_bias to dt_proj.bias, which maps to ssm_dt.bias.
    'ssm_dt.bias': 'mixer.dt_bias',
    ssm_a: 'mixer.A_log',
    ssm_d: 'mixer.D',
    'ssm_norm.weight': 'mixer.norm.weight',
    'ssm_out.weight': 'mixer.out_proj.weight',
    'ssm_out.bias': 'mixer.out_proj.bias',
  };
}

/** Stacked expert tensors (blk.N.ffn_*_exps.weight) → their names under model.layers.N. */
const STACKED_EXPERT_NAMES: Record<string, string> = {
  ffn_gate_exps: 'mlp.experts.gate_proj',
  ffn_up_exps: 'mlp.experts.up_proj',
  ffn_down_exps: 'mlp.experts.down_proj',
};

/** Older Mixtral GGUFs' one tensor per expert (blk.N.ffn_gate.E.weight) → Hugging Face's per-expert names. */
const PER_EXPERT_NAMES: Record<string, string> = { ffn_gate: 'gate_proj', ffn_up: 'up_proj', ffn_down: 'down_proj' };

/** State-space families keep their final norm as norm_f (transformers' Mamba2 / Nemotron-H). */
const STATE_SPACE_ARCHS = new Set(['mamba2', 'nemotron_h', 'nemotron_h_moe']);

/** llama.cpp tensor name → Hugging Face name (null for tensors svc has no use for, e.g. rope_freqs). */
export function hfNameOf(ggufName: string, arch?: string): string | null {
  if (ggufName === 'output_norm.weight' && arch !== undefined && STATE_SPACE_ARCHS.has(arch)) return 'model.norm_f.weight';
  if (TOP_LEVEL_NAMES[ggufName]) return TOP_LEVEL_NAMES[ggufName];
  const expert = /^blk\.(\d+)\.(ffn_gate|ffn_up|ffn_down)\.(\d+)\.weight$/.exec(ggufName);
  if (expert) return `model.layers.${expert[1]}.mlp.experts.${expert[3]}.${PER_EXPERT_NAMES[expert[2]]}.weight`;
  const own = arch === undefined ? undefined : ARCH_LAYER_NAMES[arch];
  const bare = /^blk\.(\d+)\.([a-z0-9_]+(?:\.(?:weight|bias))?)$/.exec(ggufName);
  if (own && bare && own[bare[2]]) return `model.layers.${bare[1]}.${own[bare[2]]}`;
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(ggufName);
  if (!m) return null;
  const stacked = STACKED_EXPERT_NAMES[m[2]];
  if (stacked && m[3] === 'weight') return `model.layers.${m[1]}.${stacked}`;
  const part = LAYER_NAMES[m[2]];
  return part ? `model.layers.${m[1]}.${part}.${m[3]}` : null;
}

/** What the loader does to one GGUF tensor beyond renaming it. */
export interface GgufTensorFix {
  /** The Hugging Face shape, where the converter reshaped the tensor. */
  shape?: number[];
  /** The Hugging Face values from the stored ones (decoded to f32; the tensor is then f32). */
  values?: (stored: Float32Array) => Float32Array;
}

/** The transformation convert_hf_to_gguf.py applied to `hfName` in a file of `arch`, to undo; null: none. */
export function ggufTensorFix(arch: string, hfName: string, shape: readonly number[]): GgufTensorFix | null {
  if (arch === 'gemma2' || arch === 'gemma3') {
    // Gemma2Model / Gemma3Model.modify_tensors: data_torch + 1 for every name ending in norm.weight.
    return hfName.endsWith('norm.weight') ? { values: (w) => w.map((v) => v - 1) } : null;
  }
  if (arch === 'mamba2' || arch === 'nemotron_h' || arch === 'nemotron_h_moe') {
    const count = shape.reduce((a, b) => a * b, 1);
    // Mamba2Model.modify_tensors: A_log → −exp(A_log) and A, D unsqueezed to [nh, 1].
    if (hfName.endsWith('.mixer.A_log')) return { shape: [count], values: (a) => a.map((v) => Math.log(-v)) };
    if (hfName.endsWith('.mixer.D')) return { shape: [count] };
    // conv1d.weight [C, 1, K] squeezed to [C, K].
    if (hfName.endsWith('.mixer.conv1d.weight') && shape.length === 2) return { shape: [shape[0], 1, shape[1]] };
    // The gated norm reshaped to [n_group, inner / n_group].
    if (hfName.endsWith('.mixer.norm.weight')) return { shape: [count] };
  }
  return null;
}
