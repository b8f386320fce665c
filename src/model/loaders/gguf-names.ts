// llama.cpp tensor names → the Hugging Face names svc's architectures load, and the transformations
// convert_hf_to_gguf.py applied to a tensor's values or shape, undone here so every architecture
// sees its Hugging Face checkpoint's tensors whatever the file format (one place for both).
//
// Names: one table for the decoder families (LAYER_NAMES), and per GGUF `general.architecture` the
// parts that mean something else there (llama.cpp's `ffn_norm` is Llama's post_attention_layernorm
// but Gemma's pre_feedforward_layernorm; `ffn_up` is Phi-3's fused gate_up_proj).
// Transformations (`GgufTensorMapping.values` / `.shape`), each naming the converter code it undoes:
//   gemma2 / gemma3: every `*norm.weight` was stored + 1 (Gemma2Model / Gemma3Model.modify_tensors)
//   deepseek2: kv_b_proj split per head into attn_k_b (transposed) and attn_v_b (DeepseekV2Model.modify_tensors),
//     joined back into kv_b_proj (ggufJoins); older files' attn_kv_b is kv_b_proj as it is
//   gpt-oss: gate_up_proj [E, H, 2I] (gate / up interleaved) split into ffn_gate_exps / ffn_up_exps [E, I, H] and
//     down_proj [E, I, H] stored transposed as ffn_down_exps [E, H, I], in MXFP4 (GptOssModel.repack_mxfp4 /
//     modify_tensors), joined back (ggufJoins; values decoded to bf16, exact, as the safetensors MXFP4 path)
//   mamba2 / nemotron_h[_moe]: A_log stored as A = −exp(A_log) [nh, 1], D as [nh, 1], conv1d squeezed to
//     [channels, K], the gated norm as [n_group, inner / n_group] (Mamba2Model.modify_tensors; Nemotron-H's
//     class derives from it)
//   qwen35 / qwen35moe: every norm but linear_attn.norm stored + 1, A_log as −exp(A_log), conv1d squeezed to
//     [channels, K] (Qwen3NextModel.modify_tensors); where linear_num_value_heads > linear_num_key_heads the V
//     heads reordered from grouped (by K head) to tiled order in in_proj_qkv's V rows, in_proj_z's rows,
//     in_proj_a / in_proj_b's rows, A_log, dt_bias, conv1d's V channels and out_proj's columns
//     (_LinearAttentionVReorderBase.modify_tensors, before Qwen3NextModel's steps); row reorders keep the
//     stored dtype, out_proj's column reorder decodes it to f32
import type { LinearAttentionConfig, ModelConfig } from '../types.js';

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
  // Nemotron-H: every block's mixer under `mixer.` (tensor_mapping.py "backbone.layers.{bid}.mixer.* # nemotron-h"),
  // the block's norm attn_norm; MoE blocks' router, correction bias, stacked experts and shared expert.
  nemotron_h: nemotronNames(),
  nemotron_h_moe: nemotronNames(),
  // MLA (tensor_mapping.py ATTN_Q_A … ATTN_KV_A_NORM) and DeepSeekMoE's shared experts (FFN_*_SHEXP). The
  // split attn_k_b / attn_v_b are ggufJoins'.
  deepseek2: {
    'attn_q_a.weight': 'self_attn.q_a_proj.weight',
    'attn_q_a_norm.weight': 'self_attn.q_a_layernorm.weight',
    'attn_q_b.weight': 'self_attn.q_b_proj.weight',
    'attn_kv_a_mqa.weight': 'self_attn.kv_a_proj_with_mqa.weight',
    'attn_kv_a_norm.weight': 'self_attn.kv_a_layernorm.weight',
    'attn_kv_b.weight': 'self_attn.kv_b_proj.weight',
    'ffn_gate_shexp.weight': 'mlp.shared_experts.gate_proj.weight',
    'ffn_up_shexp.weight': 'mlp.shared_experts.up_proj.weight',
    'ffn_down_shexp.weight': 'mlp.shared_experts.down_proj.weight',
  },
  // Qwen3.5 (tensor_mapping.py "# qwen3.5" / "# qwen3next"): QWEN35 has ATTN_POST_NORM, not FFN_NORM; the
  // DeltaNet's in_proj_qkv / in_proj_z are ATTN_QKV / ATTN_GATE (full-attention layers keep attn_q / k / v);
  // dt_bias was renamed dt_proj.bias (SSM_DT's .bias).
  qwen35: qwen35Names(),
  // Qwen2MoeModel's merged experts (ffn_*_exps, or ffn_gate_up_exps under --fuse-gate-up-exps: gate rows then
  // up rows per expert, transformers 5's stacked gate_up_proj) and the gated shared expert (FFN_*_SHEXP,
  // FFN_GATE_INP_SHEXP "mlp.shared_expert_gate # qwen2moe").
  qwen35moe: {
    ...qwen35Names(),
    'ffn_gate_up_exps.weight': 'mlp.experts.gate_up_proj',
    'ffn_gate_shexp.weight': 'mlp.shared_expert.gate_proj.weight',
    'ffn_up_shexp.weight': 'mlp.shared_expert.up_proj.weight',
    'ffn_down_shexp.weight': 'mlp.shared_expert.down_proj.weight',
    'ffn_gate_inp_shexp.weight': 'mlp.shared_expert_gate.weight',
  },
  // GPT_OSS's MODEL_TENSORS has ATTN_POST_NORM, not FFN_NORM; sinks got a `.weight` (GptOssModel.filter_tensors).
  // The expert weights and gate / up biases are ggufJoins'.
  'gpt-oss': {
    'post_attention_norm.weight': 'post_attention_layernorm.weight',
    'attn_sinks.weight': 'self_attn.sinks',
    'ffn_gate_inp.weight': 'mlp.router.weight',
    'ffn_gate_inp.bias': 'mlp.router.bias',
    'ffn_down_exps.bias': 'mlp.experts.down_proj_bias',
  },
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

function qwen35Names(): Record<string, string> {
  const la = (name: string): string => `linear_attn.${name}`;
  return {
    'post_attention_norm.weight': 'post_attention_layernorm.weight',
    'attn_qkv.weight': la('in_proj_qkv.weight'),
    'attn_gate.weight': la('in_proj_z.weight'),
    'ssm_alpha.weight': la('in_proj_a.weight'),
    'ssm_beta.weight': la('in_proj_b.weight'),
    'ssm_conv1d.weight': la('conv1d.weight'),
    'ssm_dt.bias': la('dt_bias'),
    ssm_a: la('A_log'),
    'ssm_norm.weight': la('norm.weight'),
    'ssm_out.weight': la('out_proj.weight'),
  };
}

function nemotronNames(): Record<string, string> {
  return {
    ...mambaNames(),
    'attn_q.weight': 'mixer.q_proj.weight',
    'attn_k.weight': 'mixer.k_proj.weight',
    'attn_v.weight': 'mixer.v_proj.weight',
    'attn_output.weight': 'mixer.o_proj.weight',
    'ffn_up.weight': 'mixer.up_proj.weight',
    'ffn_up.bias': 'mixer.up_proj.bias',
    'ffn_down.weight': 'mixer.down_proj.weight',
    'ffn_down.bias': 'mixer.down_proj.bias',
    'ffn_gate_inp.weight': 'mixer.gate.weight',
    'exp_probs_b.bias': 'mixer.gate.e_score_correction_bias',
    'ffn_up_exps.weight': 'mixer.experts.up_proj',
    'ffn_down_exps.weight': 'mixer.experts.down_proj',
    'ffn_up_shexp.weight': 'mixer.shared_experts.up_proj.weight',
    'ffn_down_shexp.weight': 'mixer.shared_experts.down_proj.weight',
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
  /** Whole rows moved (the stored dtype kept, block-quantized rows too): Hugging Face row i is stored row rows[i]. */
  rows?: Int32Array;
}

/**
 * The transformation convert_hf_to_gguf.py applied to `hfName` in a file of `arch`, to undo; null: none.
 * `config`: the file's (for transformations that depend on its shapes: Qwen3.5's V-head order).
 */
export function ggufTensorFix(arch: string, hfName: string, shape: readonly number[], config?: ModelConfig): GgufTensorFix | null {
  if (arch === 'qwen35' || arch === 'qwen35moe') return qwen35Fix(hfName, shape, config?.linearAttention);
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

/**
 * Qwen3NextModel.modify_tensors (every norm but linear_attn.norm + 1, A_log → −exp(A_log), conv1d squeezed) after
 * _LinearAttentionVReorderBase.modify_tensors (V heads grouped → tiled where the V heads outnumber the K heads),
 * undone; the shared expert's gate [1, hidden] also as a plain vector.
 */
function qwen35Fix(hfName: string, shape: readonly number[], la: LinearAttentionConfig | undefined): GgufTensorFix | null {
  const part = /\.linear_attn\.(.+)$/.exec(hfName)?.[1];
  if (part === undefined) {
    if (hfName.endsWith('norm.weight')) return { values: (w) => w.map((v) => v - 1) };
    if (hfName.endsWith('.mlp.shared_expert_gate.weight') && shape.length === 1) return { shape: [1, shape[0]] };
    return null;
  }
  // The converter reorders only where num_k_heads != num_v_heads; its other steps apply to every file.
  const reorder = la !== undefined && la.numValueHeads !== la.numKeyHeads ? la : null;
  const qk = la ? 2 * la.numKeyHeads * la.keyHeadDim : 0;
  const hv = la?.valueHeadDim ?? 0;
  /** Per Hugging Face index the stored one: `lead` entries in place, then V heads of `hd` entries; undefined: no reorder. */
  const order = (hd: number, lead = 0): Int32Array | undefined => (reorder ? tiledToGrouped(reorder, hd, lead) : undefined);
  const withRows = (rows: Int32Array | undefined, fix: GgufTensorFix = {}): GgufTensorFix | null =>
    rows ? { ...fix, rows } : Object.keys(fix).length > 0 ? fix : null;
  /** A vector's values mapped, then its entries put back in order. */
  const elements = (values: (w: Float32Array) => Float32Array, from: Int32Array | undefined): GgufTensorFix => ({
    values: (stored) => {
      const w = values(stored);
      if (!from) return w;
      const out = new Float32Array(w.length);
      for (let i = 0; i < out.length; i++) out[i] = w[from[i]];
      return out;
    },
  });
  switch (part) {
    case 'in_proj_qkv.weight':
      return withRows(order(hv, qk));
    case 'in_proj_z.weight':
      return withRows(order(hv));
    case 'in_proj_a.weight':
    case 'in_proj_b.weight':
      return withRows(order(1));
    case 'A_log':
      return elements((a) => {
        if (!a.every((v) => v < 0)) throw new Error(`${hfName}: ssm_a holds values ≥ 0, not A = −exp(A_log)`);
        return a.map((v) => Math.log(-v));
      }, order(1));
    case 'dt_bias':
      return reorder ? elements((d) => d, order(1)) : null;
    case 'conv1d.weight':
      // [channels, K] back to [channels, 1, K]; the V channels follow q and k.
      return withRows(order(hv, qk), shape.length === 2 ? { shape: [shape[0], 1, shape[1]] } : {});
    case 'out_proj.weight': {
      const cols = order(hv);
      if (!cols) return null;
      const [rows, width] = shape;
      return {
        values: (w) => {
          const out = new Float32Array(w.length);
          for (let r = 0; r < rows; r++) for (let c = 0; c < width; c++) out[r * width + c] = w[r * width + cols[c]];
          return out;
        },
      };
    }
    default:
      return null;
  }
}

/**
 * _LinearAttentionVReorderBase._reorder_v_heads undone: the V heads' `hd` entries each, after `lead` entries left in
 * place, were viewed as [numKeyHeads, heads per K head, hd] and stored as [heads per K head, numKeyHeads, hd].
 * Returns, per Hugging Face index, the stored index.
 */
function tiledToGrouped(la: LinearAttentionConfig, hd: number, lead: number): Int32Array {
  const nk = la.numKeyHeads;
  const per = la.numValueHeads / nk;
  const out = new Int32Array(lead + la.numValueHeads * hd);
  for (let i = 0; i < lead; i++) out[i] = i;
  for (let g = 0; g < nk; g++)
    for (let j = 0; j < per; j++) for (let d = 0; d < hd; d++) out[lead + (g * per + j) * hd + d] = lead + (j * nk + g) * hd + d;
  return out;
}

/**
 * One Hugging Face tensor the converter split or rearranged across GGUF tensors, rebuilt from them: the
 * parts (llama.cpp names, consumed: not loaded under names of their own), the Hugging Face shape, and
 * the values from the parts' (decoded to f32, each in its stored row-major shape).
 */
export interface GgufJoin {
  hfName: string;
  parts: string[];
  shape: number[];
  values(parts: Float32Array[]): Float32Array;
}

/** The tensors of a file of `arch` to rebuild from several GGUF tensors; `shapes`: every tensor's row-major shape by llama.cpp name. */
export function ggufJoins(arch: string, shapes: ReadonlyMap<string, readonly number[]>): GgufJoin[] {
  const joins: GgufJoin[] = [];
  for (const [name, kShape] of shapes) {
    const layer = /^blk\.(\d+)\./.exec(name)?.[1];
    if (layer === undefined) continue;
    const blk = `blk.${layer}.`;
    const hf = `model.layers.${layer}.`;
    if (arch === 'deepseek2' && name === `${blk}attn_k_b.weight`) {
      const vShape = shapes.get(`${blk}attn_v_b.weight`);
      if (vShape) joins.push(mlaKvB(`${hf}self_attn.kv_b_proj.weight`, [name, `${blk}attn_v_b.weight`], kShape, vShape));
    }
    if (arch === 'gpt-oss') {
      const up = shapes.get(`${blk}ffn_up_exps.weight`);
      if (name === `${blk}ffn_gate_exps.weight` && up) joins.push(gptOssGateUp(`${hf}mlp.experts.gate_up_proj`, blk, kShape));
      if (name === `${blk}ffn_gate_exps.bias` && shapes.has(`${blk}ffn_up_exps.bias`))
        joins.push(interleaved(`${hf}mlp.experts.gate_up_proj_bias`, [name, `${blk}ffn_up_exps.bias`], kShape));
      if (name === `${blk}ffn_down_exps.weight`) joins.push(transposedExperts(`${hf}mlp.experts.down_proj`, name, kShape));
    }
  }
  return joins;
}

/**
 * DeepseekV2Model.modify_tensors undone: kv_b_proj [heads · (nope + v), rank] was viewed per head as
 * [nope + v, rank] and split into k_b (transposed: [heads, rank, nope]) and v_b [heads, v, rank].
 */
function mlaKvB(hfName: string, parts: string[], kShape: readonly number[], vShape: readonly number[]): GgufJoin {
  const [heads, rank, nope] = kShape;
  const v = vShape[1];
  if (kShape.length !== 3 || vShape.length !== 3 || vShape[0] !== heads || vShape[2] !== rank)
    throw new Error(`${parts[0]} [${kShape.join(', ')}] and ${parts[1]} [${vShape.join(', ')}] are not one MLA kv_b split`);
  return {
    hfName,
    parts,
    shape: [heads * (nope + v), rank],
    values: ([kB, vB]) => {
      const out = new Float32Array(heads * (nope + v) * rank);
      for (let h = 0; h < heads; h++) {
        const base = h * (nope + v) * rank;
        for (let n = 0; n < nope; n++) for (let r = 0; r < rank; r++) out[base + n * rank + r] = kB[(h * rank + r) * nope + n];
        out.set(vB.subarray(h * v * rank, (h + 1) * v * rank), base + nope * rank);
      }
      return out;
    },
  };
}

/** gate_up_proj [E, H, 2I] (column 2j gate row j, 2j + 1 up's) from ffn_gate_exps / ffn_up_exps [E, I, H]. */
function gptOssGateUp(hfName: string, blk: string, shape: readonly number[]): GgufJoin {
  const [E, I, H] = shape;
  return {
    hfName,
    parts: [`${blk}ffn_gate_exps.weight`, `${blk}ffn_up_exps.weight`],
    shape: [E, H, 2 * I],
    values: ([gate, up]) => {
      const out = new Float32Array(E * H * 2 * I);
      for (let e = 0; e < E; e++)
        for (let j = 0; j < I; j++)
          for (let h = 0; h < H; h++) {
            out[(e * H + h) * 2 * I + 2 * j] = gate[(e * I + j) * H + h];
            out[(e * H + h) * 2 * I + 2 * j + 1] = up[(e * I + j) * H + h];
          }
      return out;
    },
  };
}

/** [..., 2n] with a's values at even places and b's at odd ones, from a and b [..., n] (gate_up_proj_bias's [..., ::2] / [..., 1::2] split undone). */
function interleaved(hfName: string, parts: string[], shape: readonly number[]): GgufJoin {
  const n = shape[shape.length - 1];
  const outer = shape.slice(0, -1).reduce((x, y) => x * y, 1);
  return {
    hfName,
    parts,
    shape: [...shape.slice(0, -1), 2 * n],
    values: ([a, b]) => {
      const out = new Float32Array(outer * 2 * n);
      for (let o = 0; o < outer; o++)
        for (let j = 0; j < n; j++) {
          out[(o * n + j) * 2] = a[o * n + j];
          out[(o * n + j) * 2 + 1] = b[o * n + j];
        }
      return out;
    },
  };
}

/** [E, A, B] from [E, B, A] (GPT-OSS's down_proj, stored as ffn_down_exps with its last two axes swapped). */
function transposedExperts(hfName: string, part: string, shape: readonly number[]): GgufJoin {
  const [E, B, A] = shape;
  return {
    hfName,
    parts: [part],
    shape: [E, A, B],
    values: ([w]) => {
      const out = new Float32Array(E * A * B);
      for (let e = 0; e < E; e++) for (let b = 0; b < B; b++) for (let a = 0; a < A; a++) out[(e * A + a) * B + b] = w[(e * B + b) * A + a];
      return out;
    },
  };
}
