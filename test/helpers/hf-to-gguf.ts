// Converts an arch-fixture safetensors checkpoint to a GGUF the way llama.cpp's convert_hf_to_gguf.py
// does for its family (the converter needs torch, which this machine lacks): the same tensor names
// (gguf-py tensor_mapping.py), the same transformations of values and shapes, the same metadata keys
// and values, tensor types as in the fixture (F32). Comments name the converter code each step mirrors
// (/work/llama.cpp: conversion/*.py, conversion/base.py TextModel.set_gguf_parameters). No tokenizer
// metadata: the model loader does not need one, and the fixtures have no tokenizer files.
//
// `skip` leaves one transformation out, so a test can show the loader depends on it.
import { readFileSync } from 'node:fs';
import { parseSafetensors } from '../../src/model/loaders/index.js';
import { dequantize, WEIGHT_DTYPES } from '../../src/kernels/dtypes.js';
import { f32ToF16 } from '../../src/kernels/dequant.js';
import { GGML_TYPE } from '../../src/model/loaders/gguf-header.js';
import { typed, typedArray, writeGguf, type GgufMetadataValue, type GgufTensorInput } from '../../src/model/loaders/gguf-writer.js';
import type { Tensor } from '../../src/model/types.js';
import type { RawU8Tensor } from '../../src/model/loaders/mxfp4.js';

type Json = Record<string, unknown>;

export type GgufFamily = 'gemma2' | 'gemma3' | 'olmo2' | 'phi3' | 'mamba2' | 'deepseek2' | 'gpt-oss' | 'nemotron_h' | 'qwen35';

/** Transformations a test may leave out. */
export type GgufSkip =
  | 'gemma-norm-shift'
  | 'mamba-a-exp'
  | 'phi3-fused-names'
  | 'phi3-rope-factors'
  /** deepseek2: k_b written per head untransposed ([heads, nope, rank]). */
  | 'deepseek-kb-transpose'
  /** deepseek2: kv_b_proj kept whole as attn_kv_b, as converters before the split wrote it (not a broken file). */
  | 'deepseek-legacy-kv-b'
  /** gpt-oss: the checkpoint's MXFP4 nibbles copied as they are (value 2i low, 2i + 1 high), not ggml's order. */
  | 'mxfp4-nibble-order'
  /** gpt-oss: gate taken from the odd rows of gate_up (up from the even ones). */
  | 'gpt-oss-gate-up-order'
  /** nemotron_h: head_count_kv written as one number, as families without per-layer arrays (every layer then reads as attention or MLP). */
  | 'nemotron-scalar-kv'
  /** The opposite: Q/K rows interleaved as LlamaModel.permute does, which TextModel families (OLMo 2, Gemma, Phi-3) do not get. */
  | 'llama-qk-permute'
  /** qwen35: norms written as they are (no + 1). */
  | 'qwen35-norm-shift'
  /** qwen35: the V heads left in grouped order (no _LinearAttentionVReorderBase reorder). */
  | 'qwen35-v-reorder'
  /** qwen35: A_log written as it is (no −exp). */
  | 'qwen35-a-exp'
  /** qwen35moe: gate and up experts fused into ffn_gate_up_exps, as --fuse-gate-up-exps writes them (not a broken file). */
  | 'fuse-gate-up-exps'
  /** qwen35: the layer pattern as full_attention_interval only, as files without layer_types get it (not a broken file). */
  | 'qwen35-interval-only'
  /** qwen35: 2-D weights written F16 (--outtype f16; vectors and norms stay F32), not a broken file. */
  | 'f16-weights';

export interface HfToGgufOptions {
  family: GgufFamily;
  /** The checkpoint: one file, or its shards. */
  safetensors: string | string[];
  config: Json;
  out: string;
  skip?: GgufSkip;
}

class GgufOut {
  readonly tensors: GgufTensorInput[] = [];
  readonly metadata: Record<string, GgufMetadataValue> = {};
  constructor(readonly arch: string) {
    this.metadata['general.architecture'] = arch;
    this.metadata['general.name'] = `fixture ${arch}`;
  }
  /** Raw ggml data (MXFP4 here) under its GGUF name; shape in torch order of the values. */
  raw(name: string, shape: number[], ggmlType: number, data: Uint8Array): void {
    this.tensors.push({ name, dims: [...shape].reverse(), ggmlType, data });
  }
  /** An F32 tensor under its GGUF name; shape in torch (row-major) order, as gguf-py takes numpy arrays. */
  f32(name: string, shape: number[], values: Float32Array): void {
    this.tensors.push({ name, dims: [...shape].reverse(), ggmlType: WEIGHT_DTYPES.f32.ggmlType, data: new Uint8Array(values.buffer) });
  }
  key(key: string, value: GgufMetadataValue): void {
    this.metadata[`${this.arch}.${key}`] = value;
  }
}

const f32 = (v: number): GgufMetadataValue => typed('f32', v);

function values(t: Tensor): Float32Array {
  const cols = t.shape[t.shape.length - 1] ?? 1;
  return dequantize(t.dtype, t.data, t.data.length === 0 ? 0 : t.shape.slice(0, -1).reduce((a, b) => a * b, 1), cols);
}

/** gguf-py tensor_mapping.py's names for the decoder parts every family here shares. */
const DECODER_NAMES: [RegExp, string][] = [
  [/^model\.embed_tokens\.weight$/, 'token_embd.weight'],
  [/^model\.norm\.weight$/, 'output_norm.weight'],
  [/^lm_head\.weight$/, 'output.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.q_proj\.(weight|bias)$/, 'blk.$1.attn_q.$2'],
  [/^model\.layers\.(\d+)\.self_attn\.k_proj\.(weight|bias)$/, 'blk.$1.attn_k.$2'],
  [/^model\.layers\.(\d+)\.self_attn\.v_proj\.(weight|bias)$/, 'blk.$1.attn_v.$2'],
  [/^model\.layers\.(\d+)\.self_attn\.o_proj\.(weight|bias)$/, 'blk.$1.attn_output.$2'],
  [/^model\.layers\.(\d+)\.self_attn\.q_norm\.weight$/, 'blk.$1.attn_q_norm.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.k_norm\.weight$/, 'blk.$1.attn_k_norm.weight'],
  [/^model\.layers\.(\d+)\.input_layernorm\.weight$/, 'blk.$1.attn_norm.weight'],
  [/^model\.layers\.(\d+)\.mlp\.gate_proj\.weight$/, 'blk.$1.ffn_gate.weight'],
  [/^model\.layers\.(\d+)\.mlp\.up_proj\.weight$/, 'blk.$1.ffn_up.weight'],
  [/^model\.layers\.(\d+)\.mlp\.down_proj\.weight$/, 'blk.$1.ffn_down.weight'],
];

/** Per family: names tensor_mapping.py gives only under that MODEL_ARCH (its MODEL_TENSORS list). */
const FAMILY_NAMES: Partial<Record<GgufFamily, [RegExp, string][]>> = {
  // MODEL_TENSOR.ATTN_POST_NORM, FFN_PRE_NORM, FFN_POST_NORM ("# gemma2 olmo2").
  gemma2: [
    [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.post_attention_norm.weight'],
    [/^model\.layers\.(\d+)\.pre_feedforward_layernorm\.weight$/, 'blk.$1.ffn_norm.weight'],
    [/^model\.layers\.(\d+)\.post_feedforward_layernorm\.weight$/, 'blk.$1.post_ffw_norm.weight'],
  ],
  gemma3: [],
  olmo2: [
    [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.post_attention_norm.weight'],
    [/^model\.layers\.(\d+)\.post_feedforward_layernorm\.weight$/, 'blk.$1.post_ffw_norm.weight'],
  ],
  // ATTN_QKV ("model.layers.{bid}.self_attn.qkv_proj # phi3"), FFN_UP ("mlp.gate_up_proj # phi3").
  phi3: [
    [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.ffn_norm.weight'],
    [/^model\.layers\.(\d+)\.self_attn\.qkv_proj\.weight$/, 'blk.$1.attn_qkv.weight'],
    [/^model\.layers\.(\d+)\.mlp\.gate_up_proj\.weight$/, 'blk.$1.ffn_up.weight'],
  ],
  // SSM_* ("backbone.layers.{bid}.mixer.*"), ATTN_NORM ("backbone.layers.{bid}.norm"), TOKEN_EMBD
  // ("backbone.embeddings"), OUTPUT_NORM ("backbone.norm_f"); dt_bias was renamed dt_proj.bias first.
  mamba2: [
    [/^backbone\.embeddings\.weight$/, 'token_embd.weight'],
    [/^backbone\.norm_f\.weight$/, 'output_norm.weight'],
    [/^backbone\.layers\.(\d+)\.norm\.weight$/, 'blk.$1.attn_norm.weight'],
    [/^backbone\.layers\.(\d+)\.mixer\.in_proj\.weight$/, 'blk.$1.ssm_in.weight'],
    [/^backbone\.layers\.(\d+)\.mixer\.conv1d\.(weight|bias)$/, 'blk.$1.ssm_conv1d.$2'],
    [/^backbone\.layers\.(\d+)\.mixer\.dt_bias$/, 'blk.$1.ssm_dt.bias'],
    [/^backbone\.layers\.(\d+)\.mixer\.A_log$/, 'blk.$1.ssm_a'],
    [/^backbone\.layers\.(\d+)\.mixer\.D$/, 'blk.$1.ssm_d'],
    [/^backbone\.layers\.(\d+)\.mixer\.norm\.weight$/, 'blk.$1.ssm_norm.weight'],
    [/^backbone\.layers\.(\d+)\.mixer\.out_proj\.weight$/, 'blk.$1.ssm_out.weight'],
  ],
};
FAMILY_NAMES.gemma3 = FAMILY_NAMES.gemma2;
// MODEL_TENSOR.ATTN_Q_A … ATTN_KV_A_NORM (deepseek2), FFN_*_SHEXP ("mlp.shared_experts.* # deepseek deepseek2"),
// FFN_GATE_INP ("mlp.gate"), FFN_NORM (post_attention_layernorm), FFN_*_EXP (the merged experts).
FAMILY_NAMES.deepseek2 = [
  [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.ffn_norm.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.q_a_proj\.weight$/, 'blk.$1.attn_q_a.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.q_a_layernorm\.weight$/, 'blk.$1.attn_q_a_norm.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.q_b_proj\.weight$/, 'blk.$1.attn_q_b.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.kv_a_proj_with_mqa\.weight$/, 'blk.$1.attn_kv_a_mqa.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.kv_a_layernorm\.weight$/, 'blk.$1.attn_kv_a_norm.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.kv_b_proj\.weight$/, 'blk.$1.attn_kv_b.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.k_b_proj\.weight$/, 'blk.$1.attn_k_b.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.v_b_proj\.weight$/, 'blk.$1.attn_v_b.weight'],
  [/^model\.layers\.(\d+)\.mlp\.gate\.weight$/, 'blk.$1.ffn_gate_inp.weight'],
  [/^model\.layers\.(\d+)\.mlp\.shared_experts\.(gate|up|down)_proj\.weight$/, 'blk.$1.ffn_$2_shexp.weight'],
  [/^model\.layers\.(\d+)\.mlp\.experts\.(gate|up|down)_proj\.weight$/, 'blk.$1.ffn_$2_exps.weight'],
];
// ATTN_POST_NORM (GPT_OSS has no FFN_NORM), ATTN_SINKS ("self_attn.sinks # openai-moe", `.weight` added by
// filter_tensors), FFN_GATE_INP ("mlp.router # openai-moe"), FFN_*_EXP (names after modify_tensors' renames).
FAMILY_NAMES['gpt-oss'] = [
  [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.post_attention_norm.weight'],
  [/^model\.layers\.(\d+)\.self_attn\.sinks$/, 'blk.$1.attn_sinks.weight'],
  [/^model\.layers\.(\d+)\.mlp\.router\.(weight|bias)$/, 'blk.$1.ffn_gate_inp.$2'],
  [/^model\.layers\.(\d+)\.mlp\.experts\.(gate|up|down)_proj\.(weight|bias)$/, 'blk.$1.ffn_$2_exps.$3'],
];

function mapName(family: GgufFamily, name: string, skip: GgufSkip | undefined): string {
  let table = [...(FAMILY_NAMES[family] ?? []), ...DECODER_NAMES];
  if (skip === 'phi3-fused-names') table = [[/^model\.layers\.(\d+)\.mlp\.gate_up_proj\.weight$/, 'blk.$1.ffn_gate_up.weight'], ...table];
  for (const [re, to] of table) if (re.test(name)) return name.replace(re, to);
  throw new Error(`no GGUF name for ${name} (${family})`);
}

/** LlamaModel.permute (conversion/llama.py): per head, row j·half + i moves to 2i + j. */
function llamaPermute(w: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  const hd = rows / heads;
  const half = hd / 2;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < half; i++)
        out.set(w.subarray((h * hd + j * half + i) * cols, (h * hd + j * half + i + 1) * cols), (h * hd + 2 * i + j) * cols);
  return out;
}

/** Reads the fixture's tensors (of every shard) under their checkpoint names. */
function readTensors(path: string | string[]): Map<string, Tensor> {
  const paths = typeof path === 'string' ? [path] : path;
  return new Map(paths.flatMap((p) => [...parseSafetensors(new Uint8Array(readFileSync(p)), p).tensors]));
}

const num = (c: Json, key: string): number => {
  const v = c[key];
  if (typeof v !== 'number') throw new Error(`fixture config has no ${key}`);
  return v;
};
const opt = (c: Json, key: string): number | undefined => (typeof c[key] === 'number' ? (c[key] as number) : undefined);

/** TextModel.set_gguf_parameters (conversion/base.py): the keys every text family gets from config.json. */
function baseKeys(g: GgufOut, c: Json): void {
  g.key('block_count', num(c, 'num_hidden_layers'));
  g.key('context_length', num(c, 'max_position_embeddings'));
  g.key('embedding_length', num(c, 'hidden_size'));
  g.key('feed_forward_length', num(c, 'intermediate_size'));
  g.key('attention.head_count', num(c, 'num_attention_heads'));
  if (opt(c, 'num_key_value_heads') !== undefined) g.key('attention.head_count_kv', num(c, 'num_key_value_heads'));
  const rope = (c.rope_parameters ?? c.rope_scaling ?? {}) as Json;
  const theta = opt(rope, 'rope_theta') ?? opt(c, 'rope_theta');
  if (theta !== undefined) g.key('rope.freq_base', f32(theta));
  const local = opt(c, 'rope_local_base_freq');
  if (local !== undefined) g.key('rope.freq_base_swa', f32(local));
  if (opt(c, 'rms_norm_eps') !== undefined) g.key('attention.layer_norm_rms_epsilon', f32(num(c, 'rms_norm_eps')));
  if (opt(c, 'head_dim') !== undefined) {
    g.key('attention.key_length', num(c, 'head_dim'));
    g.key('attention.value_length', num(c, 'head_dim'));
  }
  g.metadata['general.file_type'] = 0; // ALL_F32
}

/** Writes `opts.out`. */
export function hfToGguf(opts: HfToGgufOptions): void {
  if (opts.family === 'deepseek2') return deepseek2ToGguf(opts);
  if (opts.family === 'gpt-oss') return gptOssToGguf(opts);
  if (opts.family === 'nemotron_h') return nemotronHToGguf(opts);
  if (opts.family === 'qwen35') return qwen35ToGguf(opts);
  const { family, config: c, skip } = opts;
  const g = new GgufOut(family);
  const tensors = readTensors(opts.safetensors);
  for (const [name, t] of tensors) {
    // Gemma2Model.filter_tensors drops lm_head (tied); the fixtures' Gemma heads are tied copies.
    if ((family === 'gemma2' || family === 'gemma3') && name === 'lm_head.weight') continue;
    let v = values(t);
    let shape = [...t.shape];
    const to = mapName(family, name, skip);
    if ((family === 'gemma2' || family === 'gemma3') && name.endsWith('norm.weight') && skip !== 'gemma-norm-shift') {
      // Gemma2Model.modify_tensors: data_torch + 1 (Gemma3Model: norm_shift 1.0), every *norm.weight.
      v = v.map((x) => x + 1);
    }
    if (skip === 'llama-qk-permute' && /self_attn\.[qk]_proj\.weight$/.test(name)) {
      const heads = name.includes('q_proj')
        ? num(c, 'num_attention_heads')
        : (opt(c, 'num_key_value_heads') ?? num(c, 'num_attention_heads'));
      v = llamaPermute(v, shape[0], shape[1], heads);
    }
    if (family === 'mamba2') {
      // Mamba2Model.modify_tensors.
      if (to.endsWith('ssm_conv1d.weight')) shape = shape.filter((d) => d !== 1); // squeeze()
      if (to.endsWith('ssm_a') || to.endsWith('ssm_d')) shape = [...shape, 1]; // reshape (*shape, 1)
      if (to.endsWith('ssm_norm.weight')) {
        const groups = opt(c, 'n_groups') ?? 1;
        shape = [groups, shape[0] / groups]; // reshape (n_group, d_inner // n_group)
      }
      if (name.endsWith('.A_log') && skip !== 'mamba-a-exp') v = v.map((x) => -Math.exp(x)); // -torch.exp(A_log)
    }
    g.f32(to, shape, v);
  }
  if (family === 'gemma2') gemma2Keys(g, c);
  else if (family === 'gemma3') gemma3Keys(g, c);
  else if (family === 'olmo2')
    baseKeys(g, c); // Olmo2Model: TextModel's keys (sliding_window only for OLMo 3)
  else if (family === 'phi3') phi3Keys(g, c, skip);
  else mamba2Keys(g, c);
  writeGguf(opts.out, { metadata: g.metadata, tensors: g.tensors });
}

/** TextModel.set_gguf_parameters' RoPE scaling keys (conversion/base.py): rope_parameters, else rope_scaling. */
function ropeScalingKeys(g: GgufOut, c: Json): void {
  const rope = (c.rope_parameters ?? c.rope_scaling ?? {}) as Json;
  const type = rope.rope_type ?? rope.type;
  const factor = opt(rope, 'factor');
  if (type !== 'yarn' || factor === undefined) return;
  g.key('rope.scaling.type', 'yarn');
  g.key('rope.scaling.factor', f32(factor));
  g.key('rope.scaling.original_context_length', num(rope, 'original_max_position_embeddings'));
  const ext = opt(rope, 'extrapolation_factor');
  if (ext !== undefined) g.key('rope.scaling.yarn_ext_factor', f32(ext));
  const attn = opt(rope, 'attention_factor') ?? opt(rope, 'attn_factor');
  if (attn !== undefined) g.key('rope.scaling.yarn_attn_factor', f32(attn));
  const fast = opt(rope, 'beta_fast');
  if (fast !== undefined) g.key('rope.scaling.yarn_beta_fast', f32(fast));
  const slow = opt(rope, 'beta_slow');
  if (slow !== undefined) g.key('rope.scaling.yarn_beta_slow', f32(slow));
}

/** TextModel.set_gguf_parameters' expert keys (find_hparam over the names it lists). */
function expertKeys(g: GgufOut, c: Json): void {
  const count = opt(c, 'num_local_experts') ?? opt(c, 'num_experts') ?? opt(c, 'n_routed_experts');
  if (count !== undefined) g.key('expert_count', count);
  const used = opt(c, 'num_experts_per_tok') ?? opt(c, 'num_experts_per_token');
  if (used !== undefined) g.key('expert_used_count', used);
  if (opt(c, 'n_group') !== undefined) g.key('expert_group_count', num(c, 'n_group'));
  if (opt(c, 'topk_group') !== undefined) g.key('expert_group_used_count', num(c, 'topk_group'));
  const score = c.scoring_func ?? c.score_function;
  if (score === 'softmax') g.key('expert_gating_func', 1);
  else if (score === 'sigmoid') g.key('expert_gating_func', 2);
}

/** DeepseekV2Model (conversion/deepseek.py): merged experts, kv_b_proj split into k_b (transposed) and v_b, MLA keys. */
function deepseek2ToGguf(opts: HfToGgufOptions): void {
  const { config: c, skip } = opts;
  const g = new GgufOut('deepseek2');
  const tensors = readTensors(opts.safetensors);
  const heads = num(c, 'num_attention_heads');
  const nope = num(c, 'qk_nope_head_dim');
  const vDim = num(c, 'v_head_dim');
  const nExperts = num(c, 'n_routed_experts');
  for (const [name, t] of tensors) {
    if (c.tie_word_embeddings === true && name === 'lm_head.weight') continue;
    const expert = /^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight$/.exec(name);
    if (expert) {
      // merge_expert: once a layer's experts are all read, torch.stack per weight (down, gate, up).
      if (expert[2] !== String(nExperts - 1) || expert[3] !== 'up_proj') continue;
      for (const w of ['down_proj', 'gate_proj', 'up_proj']) {
        const parts = Array.from(
          { length: nExperts },
          (_, e) => tensors.get(`model.layers.${expert[1]}.mlp.experts.${e}.${w}.weight`) as Tensor,
        );
        const stacked = new Float32Array(parts.reduce((n, p) => n + values(p).length, 0));
        parts.forEach((p, e) => stacked.set(values(p), e * values(p).length));
        const merged = `model.layers.${expert[1]}.mlp.experts.${w}.weight`;
        g.f32(mapName('deepseek2', merged, skip), [nExperts, ...parts[0].shape], stacked);
      }
      continue;
    }
    const v = values(t);
    if (name.endsWith('kv_b_proj.weight') && skip !== 'deepseek-legacy-kv-b') {
      // kv_b.view(n_head_kv, v + nope, rank); split [nope, v] on dim 1; k_b.transpose(1, 2).
      const rank = t.shape[1];
      const kB = new Float32Array(heads * nope * rank);
      const vB = new Float32Array(heads * vDim * rank);
      for (let h = 0; h < heads; h++) {
        const base = h * (nope + vDim) * rank;
        for (let n = 0; n < nope; n++)
          for (let r = 0; r < rank; r++) {
            const x = v[base + n * rank + r];
            if (skip === 'deepseek-kb-transpose') kB[(h * nope + n) * rank + r] = x;
            else kB[(h * rank + r) * nope + n] = x;
          }
        vB.set(v.subarray(base + nope * rank, base + (nope + vDim) * rank), h * vDim * rank);
      }
      const kShape = skip === 'deepseek-kb-transpose' ? [heads, nope, rank] : [heads, rank, nope];
      g.f32(mapName('deepseek2', name.replace('kv_b_proj', 'k_b_proj'), skip), kShape, kB);
      g.f32(mapName('deepseek2', name.replace('kv_b_proj', 'v_b_proj'), skip), [heads, vDim, rank], vB);
      continue;
    }
    g.f32(mapName('deepseek2', name, skip), [...t.shape], v);
  }
  // set_gguf_parameters: num_key_value_heads = 1 (MLA as MQA), rms_norm_eps default 1e-6, TextModel's keys, then its own.
  const h = { ...c, num_key_value_heads: 1, rms_norm_eps: opt(c, 'rms_norm_eps') ?? 1e-6 };
  baseKeys(g, h);
  ropeScalingKeys(g, h);
  expertKeys(g, h);
  const hasMoe = opt(c, 'n_routed_experts') !== undefined;
  g.key('leading_dense_block_count', opt(c, 'first_k_dense_replace') ?? (hasMoe ? 0 : num(c, 'num_hidden_layers')));
  const rank = opt(c, 'kv_lora_rank') ?? 512;
  const rope = num(c, 'qk_rope_head_dim');
  g.key('vocab_size', num(c, 'vocab_size'));
  if (opt(c, 'q_lora_rank') !== undefined) g.key('attention.q_lora_rank', num(c, 'q_lora_rank'));
  g.key('attention.kv_lora_rank', rank);
  g.key('attention.key_length', rank + rope);
  g.key('attention.value_length', rank);
  g.key('attention.key_length_mla', nope + rope);
  g.key('attention.value_length_mla', vDim);
  g.key('expert_feed_forward_length', opt(c, 'moe_intermediate_size') ?? num(c, 'intermediate_size'));
  if (hasMoe) g.key('expert_count', nExperts);
  g.key('expert_shared_count', opt(c, 'n_shared_experts') ?? 0);
  if (opt(c, 'routed_scaling_factor') !== undefined) g.key('expert_weights_scale', f32(num(c, 'routed_scaling_factor')));
  if (c.norm_topk_prob === true) g.key('expert_weights_norm', true);
  g.key('rope.dimension_count', rope);
  const allDim = opt((c.rope_parameters ?? c.rope_scaling ?? {}) as Json, 'mscale_all_dim');
  // [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]: 0.1 · mscale_all_dim.
  if (allDim !== undefined) g.key('rope.scaling.yarn_log_multiplier', f32(0.1 * allDim));
  writeGguf(opts.out, { metadata: g.metadata, tensors: g.tensors });
}

/**
 * GptOssModel.transform_nibble_layout (conversion/gpt_oss.py), on one block's 16 bytes: the checkpoint
 * holds value 2i in byte i's low nibble and 2i + 1 in its high one; ggml's block holds value j low and
 * j + 16 high. Step by step as the converter does it: swap nibbles, interleave the halves, swap again.
 */
function transformNibbleLayout(block: Uint8Array): Uint8Array {
  const t = block.map((b) => ((b & 0x0f) << 4) | ((b & 0xf0) >> 4));
  const out = new Uint8Array(16);
  // blk_a = t[0:8], blk_b = t[8:16]; a0 = a & 0xF0, a1 = (a << 4) & 0xFF; b0 = b >> 4, b1 = b & 0x0F;
  // out[2i] = a0[i] | b0[i], out[2i + 1] = a1[i] | b1[i].
  for (let i = 0; i < 8; i++) {
    const a = t[i];
    const b = t[8 + i];
    out[2 * i] = (a & 0xf0) | (b >> 4);
    out[2 * i + 1] = ((a << 4) & 0xff) | (b & 0x0f);
  }
  return out.map((x) => ((x & 0xf0) >> 4) | ((x & 0x0f) << 4));
}

/**
 * GptOssModel.repack_mxfp4: blocks [E, R, G, 16] and scales [E, R, G] → ggml MXFP4 rows [E, R, G · 32]
 * (per block the scale byte, then the transformed nibbles).
 */
function repackMxfp4(
  blocks: RawU8Tensor,
  scales: RawU8Tensor,
  rows: number[] | null,
  skip: GgufSkip | undefined,
): { shape: number[]; data: Uint8Array } {
  const [E, R, G] = blocks.shape;
  const picked = rows ?? Array.from({ length: R }, (_, r) => r);
  const data = new Uint8Array(E * picked.length * G * 17);
  let at = 0;
  for (let e = 0; e < E; e++)
    for (const r of picked)
      for (let gi = 0; gi < G; gi++) {
        const b = (e * R + r) * G + gi;
        data[at] = scales.data[b];
        const src = blocks.data.subarray(b * 16, b * 16 + 16);
        data.set(skip === 'mxfp4-nibble-order' ? src : transformNibbleLayout(src), at + 1);
        at += 17;
      }
  return { shape: [E, picked.length, G * 32], data };
}

/** GptOssModel (conversion/gpt_oss.py) on an MXFP4 checkpoint: experts repacked to ggml MXFP4 and gate / up split. */
function gptOssToGguf(opts: HfToGgufOptions): void {
  const { config: c, skip } = opts;
  const g = new GgufOut('gpt-oss');
  if (typeof opts.safetensors !== 'string') throw new Error('gpt-oss: one safetensors file');
  const raw = parseSafetensors(new Uint8Array(readFileSync(opts.safetensors)), opts.safetensors);
  const tensors = raw.tensors;
  const u8 = raw.u8;
  for (const [name, t] of tensors) {
    if (name.endsWith('gate_up_proj_bias')) {
      // gate = [..., ::2], up = [..., 1::2].
      const v = values(t);
      const [E, twoI] = t.shape;
      const even = new Float32Array((E * twoI) / 2);
      const odd = new Float32Array((E * twoI) / 2);
      for (let i = 0; i < even.length; i++) {
        even[i] = v[2 * i];
        odd[i] = v[2 * i + 1];
      }
      const [gate, up] = skip === 'gpt-oss-gate-up-order' ? [odd, even] : [even, odd];
      g.f32(mapName('gpt-oss', name.replace('gate_up_proj_bias', 'gate_proj.bias'), skip), [E, twoI / 2], gate);
      g.f32(mapName('gpt-oss', name.replace('gate_up_proj_bias', 'up_proj.bias'), skip), [E, twoI / 2], up);
      continue;
    }
    if (name.endsWith('down_proj_bias')) {
      g.f32(mapName('gpt-oss', name.replace('down_proj_bias', 'down_proj.bias'), skip), [...t.shape], values(t));
      continue;
    }
    if (name.endsWith('_blocks') || name.endsWith('_scales') || name.endsWith('gate_up_proj') || name.endsWith('down_proj')) continue;
    g.f32(mapName('gpt-oss', name, skip), [...t.shape], values(t));
  }
  // generate_extra_tensors: the MXFP4 pairs, repacked.
  if (u8.size === 0) throw new Error('gpt-oss: the fixture must be the MXFP4 checkpoint');
  for (const [name, blocks] of u8) {
    if (!name.endsWith('_blocks')) continue;
    const scales = u8.get(name.replace('_blocks', '_scales')) as RawU8Tensor;
    const R = blocks.shape[1];
    if (name.endsWith('down_proj_blocks')) {
      const { shape, data } = repackMxfp4(blocks, scales, null, skip);
      g.raw(mapName('gpt-oss', name.replace('_blocks', '.weight'), skip), shape, GGML_TYPE.MXFP4, data);
    } else {
      const even = Array.from({ length: R / 2 }, (_, j) => 2 * j);
      const odd = even.map((r) => r + 1);
      const [gateRows, upRows] = skip === 'gpt-oss-gate-up-order' ? [odd, even] : [even, odd];
      const gate = repackMxfp4(blocks, scales, gateRows, skip);
      const up = repackMxfp4(blocks, scales, upRows, skip);
      g.raw(mapName('gpt-oss', name.replace('gate_up_proj_blocks', 'gate_proj.weight'), skip), gate.shape, GGML_TYPE.MXFP4, gate.data);
      g.raw(mapName('gpt-oss', name.replace('gate_up_proj_blocks', 'up_proj.weight'), skip), up.shape, GGML_TYPE.MXFP4, up.data);
    }
  }
  baseKeys(g, c);
  ropeScalingKeys(g, c);
  expertKeys(g, c);
  g.key('attention.sliding_window', num(c, 'sliding_window'));
  g.key('expert_feed_forward_length', num(c, 'intermediate_size'));
  writeGguf(opts.out, { metadata: g.metadata, tensors: g.tensors });
}

/** Gemma2Model.set_gguf_parameters (conversion/gemma.py). */
function gemma2Keys(g: GgufOut, c: Json): void {
  g.key('context_length', num(c, 'max_position_embeddings'));
  g.key('embedding_length', num(c, 'hidden_size'));
  g.key('block_count', num(c, 'num_hidden_layers'));
  g.key('feed_forward_length', num(c, 'intermediate_size'));
  g.key('attention.head_count', num(c, 'num_attention_heads'));
  g.key('attention.head_count_kv', opt(c, 'num_key_value_heads') ?? num(c, 'num_attention_heads'));
  g.key('attention.layer_norm_rms_epsilon', f32(num(c, 'rms_norm_eps')));
  g.key('attention.key_length', num(c, 'head_dim'));
  g.key('attention.value_length', num(c, 'head_dim'));
  g.metadata['general.file_type'] = 0;
  g.key('attn_logit_softcapping', f32(num(c, 'attn_logit_softcapping')));
  g.key('final_logit_softcapping', f32(num(c, 'final_logit_softcapping')));
  g.key('attention.sliding_window', num(c, 'sliding_window'));
}

/** Gemma3Model.set_gguf_parameters: TextModel's keys, then its own (defaults as it gives them). */
function gemma3Keys(g: GgufOut, c: Json): void {
  baseKeys(g, c);
  g.key('context_length', opt(c, 'max_position_embeddings') ?? 131072);
  g.key('attention.head_count', opt(c, 'num_attention_heads') ?? 8);
  g.key('attention.layer_norm_rms_epsilon', f32(opt(c, 'rms_norm_eps') ?? 1e-6));
  g.key('attention.key_length', opt(c, 'head_dim') ?? 256);
  g.key('attention.value_length', opt(c, 'head_dim') ?? 256);
  g.key('rope.freq_base', f32(opt(c, 'rope_theta') ?? 1_000_000));
  const final = opt(c, 'final_logit_softcapping');
  if (final) g.key('final_logit_softcapping', f32(final));
  if (c.sliding_window_pattern !== 1) g.key('attention.sliding_window', num(c, 'sliding_window'));
  g.key('attention.head_count_kv', opt(c, 'num_key_value_heads') ?? 4);
}

/**
 * Phi3MiniModel.set_gguf_parameters and generate_extra_tensors (conversion/phi.py). The converter
 * reads rope_parameters["original_max_position_embeddings"] unconditionally; the plain tiny Phi-3
 * fixture has none, so it is taken as max_position_embeddings there (no LongRoPE: unused).
 */
function phi3Keys(g: GgufOut, c: Json, skip: GgufSkip | undefined): void {
  const rope = (c.rope_parameters ?? c.rope_scaling ?? {}) as Json;
  const hidden = num(c, 'hidden_size');
  const heads = num(c, 'num_attention_heads');
  const maxPos = num(c, 'max_position_embeddings');
  const origMax = opt(rope, 'original_max_position_embeddings') ?? opt(c, 'original_max_position_embeddings') ?? maxPos;
  const rotPct = opt(rope, 'partial_rotary_factor') ?? opt(c, 'partial_rotary_factor') ?? 1;
  const ropeDims = Math.floor(Math.trunc(rotPct * hidden) / heads);
  g.key('context_length', maxPos);
  g.key('rope.scaling.original_context_length', origMax);
  g.key('embedding_length', hidden);
  g.key('feed_forward_length', num(c, 'intermediate_size'));
  g.key('block_count', num(c, 'num_hidden_layers'));
  g.key('attention.head_count', heads);
  g.key('attention.head_count_kv', num(c, 'num_key_value_heads'));
  g.key('attention.layer_norm_rms_epsilon', f32(num(c, 'rms_norm_eps')));
  g.key('rope.dimension_count', ropeDims);
  g.key('rope.freq_base', f32(opt(rope, 'rope_theta') ?? num(c, 'rope_theta')));
  g.metadata['general.file_type'] = 0;
  g.key('attention.sliding_window', opt(c, 'sliding_window') ?? 0);
  const long = rope.long_factor as number[] | undefined;
  const short = rope.short_factor as number[] | undefined;
  if (!long || !short || skip === 'phi3-rope-factors') return;
  const scale = maxPos / origMax;
  g.key('rope.scaling.attn_factor', f32(scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(origMax)) : 1));
  g.f32('rope_factors_long.weight', [long.length], Float32Array.from(long));
  g.f32('rope_factors_short.weight', [short.length], Float32Array.from(short));
}

/** Mamba2Model.set_gguf_parameters (conversion/mamba.py). */
function mamba2Keys(g: GgufOut, c: Json): void {
  const dModel = num(c, 'hidden_size');
  const expand = opt(c, 'expand') ?? 2;
  const dInner = opt(c, 'intermediate_size') ?? expand * dModel;
  const headDim = opt(c, 'head_dim') ?? 64;
  g.key('context_length', 2 ** 20);
  g.key('embedding_length', dModel);
  g.key('feed_forward_length', 0);
  g.key('attention.head_count', 0);
  g.key('block_count', num(c, 'num_hidden_layers'));
  g.key('ssm.conv_kernel', opt(c, 'conv_kernel') ?? 4);
  g.key('ssm.inner_size', dInner);
  g.key('ssm.state_size', opt(c, 'state_size') ?? 128);
  g.key('ssm.time_step_rank', dInner / headDim);
  g.key('ssm.group_count', opt(c, 'n_groups') ?? 1);
  g.key('attention.layer_norm_rms_epsilon', f32(opt(c, 'layer_norm_epsilon') ?? 1e-5));
  g.metadata['general.file_type'] = 0;
}

/** tensor_mapping.py's Nemotron-H names ("backbone.layers.{bid}.mixer.* # nemotron-h[-moe]"), for the fixture's model.* names. */
const NEMOTRON_NAMES: [RegExp, string][] = [
  [/^model\.embeddings\.weight$/, 'token_embd.weight'],
  [/^model\.norm_f\.weight$/, 'output_norm.weight'],
  [/^lm_head\.weight$/, 'output.weight'],
  [/^model\.layers\.(\d+)\.norm\.weight$/, 'blk.$1.attn_norm.weight'],
  [/^model\.layers\.(\d+)\.mixer\.in_proj\.(weight|bias)$/, 'blk.$1.ssm_in.$2'],
  [/^model\.layers\.(\d+)\.mixer\.conv1d\.(weight|bias)$/, 'blk.$1.ssm_conv1d.$2'],
  [/^model\.layers\.(\d+)\.mixer\.dt_bias$/, 'blk.$1.ssm_dt.bias'],
  [/^model\.layers\.(\d+)\.mixer\.A_log$/, 'blk.$1.ssm_a'],
  [/^model\.layers\.(\d+)\.mixer\.D$/, 'blk.$1.ssm_d'],
  [/^model\.layers\.(\d+)\.mixer\.norm\.weight$/, 'blk.$1.ssm_norm.weight'],
  [/^model\.layers\.(\d+)\.mixer\.out_proj\.(weight|bias)$/, 'blk.$1.ssm_out.$2'],
  [/^model\.layers\.(\d+)\.mixer\.q_proj\.weight$/, 'blk.$1.attn_q.weight'],
  [/^model\.layers\.(\d+)\.mixer\.k_proj\.weight$/, 'blk.$1.attn_k.weight'],
  [/^model\.layers\.(\d+)\.mixer\.v_proj\.weight$/, 'blk.$1.attn_v.weight'],
  [/^model\.layers\.(\d+)\.mixer\.o_proj\.weight$/, 'blk.$1.attn_output.weight'],
  [/^model\.layers\.(\d+)\.mixer\.(up|down)_proj\.(weight|bias)$/, 'blk.$1.ffn_$2.$3'],
  [/^model\.layers\.(\d+)\.mixer\.gate\.weight$/, 'blk.$1.ffn_gate_inp.weight'],
  [/^model\.layers\.(\d+)\.mixer\.gate\.e_score_correction_bias$/, 'blk.$1.exp_probs_b.bias'],
  [/^model\.layers\.(\d+)\.mixer\.experts\.(up|down)_proj$/, 'blk.$1.ffn_$2_exps.weight'],
  [/^model\.layers\.(\d+)\.mixer\.shared_experts\.(up|down)_proj\.weight$/, 'blk.$1.ffn_$2_shexp.weight'],
];

/**
 * NemotronHModel (conversion/nemotron.py) over GraniteHybridModel and Mamba2Model: Mamba blocks as Mamba2Model.modify_tensors,
 * attention blocks through GraniteMoeModel (LlamaModel.permute of Q/K — not applied here: the fixture's head_dim 3
 * cannot be split in halves, and without RoPE the interleave changes no attention score), the rest as they are;
 * per-layer head_count_kv / feed_forward_length arrays.
 */
function nemotronHToGguf(opts: HfToGgufOptions): void {
  const { config: c, skip } = opts;
  const pattern = String(c.hybrid_override_pattern);
  const isMoe = c.num_experts_per_tok !== undefined;
  const g = new GgufOut(isMoe ? 'nemotron_h_moe' : 'nemotron_h');
  const nGroups = opt(c, 'n_groups') ?? 1;
  for (const [name, t] of readTensors(opts.safetensors)) {
    const to = NEMOTRON_NAMES.find(([re]) => re.test(name));
    if (!to) throw new Error(`no GGUF name for ${name} (nemotron_h)`);
    const gguf = name.replace(to[0], to[1]);
    let v = values(t);
    let shape = [...t.shape];
    if (gguf.endsWith('ssm_conv1d.weight')) shape = shape.filter((d) => d !== 1);
    if (gguf.endsWith('ssm_a') || gguf.endsWith('ssm_d')) shape = [shape[0], 1];
    if (gguf.endsWith('ssm_norm.weight')) shape = [nGroups, shape[0] / nGroups];
    if (gguf.endsWith('ssm_a')) v = v.map((x) => -Math.exp(x));
    g.f32(gguf, shape, v);
  }
  const n = pattern.length;
  const attn = [...pattern].map((ch) => ch === '*');
  const mlp = [...pattern].map((ch) => ch === (isMoe ? 'E' : '-'));
  // GraniteMoeModel → TextModel keys (layer_norm_epsilon as attention.layer_norm_epsilon), then GraniteHybridModel's.
  g.key('block_count', n);
  g.key('embedding_length', num(c, 'hidden_size'));
  g.key('attention.head_count', num(c, 'num_attention_heads'));
  g.key('attention.layer_norm_epsilon', f32(opt(c, 'layer_norm_epsilon') ?? 1e-5));
  g.metadata['general.file_type'] = 0;
  g.key('ssm.conv_kernel', opt(c, 'conv_kernel') ?? 4);
  g.key('ssm.state_size', num(c, 'ssm_state_size'));
  g.key('ssm.group_count', nGroups);
  g.key('ssm.inner_size', num(c, 'mamba_num_heads') * num(c, 'mamba_head_dim'));
  g.key('ssm.time_step_rank', num(c, 'mamba_num_heads'));
  const kv = num(c, 'num_key_value_heads');
  if (skip === 'nemotron-scalar-kv') g.key('attention.head_count_kv', kv);
  else
    g.key(
      'attention.head_count_kv',
      typedArray(
        'u32',
        attn.map((a) => (a ? kv : 0)),
      ),
    );
  g.key('context_length', 2 ** 20);
  g.key('attention.key_length', num(c, 'head_dim'));
  g.key('attention.value_length', num(c, 'head_dim'));
  const ff = isMoe ? num(c, 'moe_intermediate_size') : num(c, 'intermediate_size');
  g.key(
    'feed_forward_length',
    typedArray(
      'u32',
      mlp.map((m) => (m ? ff : 0)),
    ),
  );
  if (isMoe) {
    expertKeys(g, c);
    g.key('expert_used_count', num(c, 'num_experts_per_tok'));
    g.key('expert_feed_forward_length', num(c, 'moe_intermediate_size'));
    g.key('expert_shared_feed_forward_length', num(c, 'moe_shared_expert_intermediate_size'));
    g.key('expert_count', num(c, 'n_routed_experts'));
    g.key('expert_shared_count', num(c, 'n_shared_experts'));
    g.key('expert_weights_norm', c.norm_topk_prob === true);
    g.key('expert_weights_scale', f32(num(c, 'routed_scaling_factor')));
    g.key('expert_group_count', num(c, 'n_group'));
  }
  writeGguf(opts.out, { metadata: g.metadata, tensors: g.tensors });
}

/** tensor_mapping.py's QWEN35 / QWEN35MOE names beside DECODER_NAMES (after Qwen3NextModel's dt_bias → dt_proj.bias). */
const QWEN35_NAMES: [RegExp, string][] = [
  [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.post_attention_norm.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.in_proj_qkv\.weight$/, 'blk.$1.attn_qkv.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.in_proj_z\.weight$/, 'blk.$1.attn_gate.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.in_proj_a\.weight$/, 'blk.$1.ssm_alpha.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.in_proj_b\.weight$/, 'blk.$1.ssm_beta.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.conv1d\.weight$/, 'blk.$1.ssm_conv1d.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.dt_proj\.bias$/, 'blk.$1.ssm_dt.bias'],
  [/^model\.layers\.(\d+)\.linear_attn\.A_log$/, 'blk.$1.ssm_a'],
  [/^model\.layers\.(\d+)\.linear_attn\.norm\.weight$/, 'blk.$1.ssm_norm.weight'],
  [/^model\.layers\.(\d+)\.linear_attn\.out_proj\.weight$/, 'blk.$1.ssm_out.weight'],
  [/^model\.layers\.(\d+)\.mlp\.gate\.weight$/, 'blk.$1.ffn_gate_inp.weight'],
  [/^model\.layers\.(\d+)\.mlp\.experts\.(gate|up|down)_proj\.weight$/, 'blk.$1.ffn_$2_exps.weight'],
  [/^model\.layers\.(\d+)\.mlp\.shared_expert\.(gate|up|down)_proj\.weight$/, 'blk.$1.ffn_$2_shexp.weight'],
  [/^model\.layers\.(\d+)\.mlp\.shared_expert_gate\.weight$/, 'blk.$1.ffn_gate_inp_shexp.weight'],
  ...DECODER_NAMES,
];

/**
 * _LinearAttentionVReorderBase._reorder_v_heads along rows (dim 0) or columns (dim 1) of a [rows, cols] tensor: the
 * `hd`-sized heads viewed as [nk, per, hd], stored as [per, nk, hd].
 */
function reorderVHeads(w: Float32Array, rows: number, cols: number, dim: 0 | 1, nk: number, per: number, hd: number): Float32Array {
  const out = new Float32Array(w.length);
  const moved = (i: number): number => {
    const d = i % hd;
    const head = (i - d) / hd;
    const g = Math.floor(head / per);
    const j = head % per;
    return (j * nk + g) * hd + d;
  };
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      if (dim === 0) out[moved(r) * cols + c] = w[r * cols + c];
      else out[r * cols + moved(c)] = w[r * cols + c];
    }
  return out;
}

/**
 * Qwen3_5TextModel / Qwen3_5MoeTextModel (conversion/qwen.py, --no-mtp: the fixtures have no MTP block) on a
 * Qwen3_5ForConditionalGeneration checkpoint: text_config over the top level, the vision tower dropped and
 * `language_model.` removed (TextModel / ModelBase.filter_tensors); then per tensor _LinearAttentionVReorderBase's V-head
 * reorder, Qwen3NextModel's A = −exp(A_log), dt_bias rename, conv1d squeeze and norm + 1, Qwen2MoeModel's merged
 * experts; Qwen3NextModel.set_gguf_parameters' keys.
 */
function qwen35ToGguf(opts: HfToGgufOptions): void {
  const { skip } = opts;
  const c = { ...opts.config, ...(opts.config.text_config as Json | undefined) };
  const isMoe = opt(c, 'num_experts') !== undefined;
  const g = new GgufOut(isMoe ? 'qwen35moe' : 'qwen35');
  const nk = num(c, 'linear_num_key_heads');
  const nv = num(c, 'linear_num_value_heads');
  const hk = num(c, 'linear_key_head_dim');
  const hv = num(c, 'linear_value_head_dim');
  const per = nv / nk;
  const reorder = nk !== nv && skip !== 'qwen35-v-reorder';
  const nExperts = opt(c, 'num_experts') ?? 0;
  const experts = new Map<string, Tensor>();
  const gateUp = new Map<string, Float32Array>();
  const write = (name: string, shape: number[], v: Float32Array): void => {
    const to = QWEN35_NAMES.find(([re]) => re.test(name));
    if (!to) throw new Error(`no GGUF name for ${name} (qwen35)`);
    const gguf = name.replace(to[0], to[1]);
    // TextModel.modify_tensors under --fuse-gate-up-exps: torch.cat([gate, up], dim=1).
    const fused = /^blk\.(\d+)\.ffn_(gate|up)_exps\.weight$/.exec(gguf);
    if (skip === 'fuse-gate-up-exps' && fused) {
      const other = gateUp.get(`${fused[1]}.${fused[2] === 'gate' ? 'up' : 'gate'}`);
      if (!other) {
        gateUp.set(`${fused[1]}.${fused[2]}`, v);
        return;
      }
      const [gate, up] = fused[2] === 'gate' ? [v, other] : [other, v];
      const [E, I, H] = shape;
      const out = new Float32Array(2 * gate.length);
      for (let e = 0; e < E; e++) {
        out.set(gate.subarray(e * I * H, (e + 1) * I * H), 2 * e * I * H);
        out.set(up.subarray(e * I * H, (e + 1) * I * H), (2 * e + 1) * I * H);
      }
      g.f32(`blk.${fused[1]}.ffn_gate_up_exps.weight`, [E, 2 * I, H], out);
      return;
    }
    if (skip === 'f16-weights' && shape.length >= 2 && !gguf.endsWith('norm.weight')) {
      g.raw(gguf, shape, GGML_TYPE.F16, new Uint8Array(Uint16Array.from(v, f32ToF16).buffer));
      return;
    }
    g.f32(gguf, shape, v);
  };
  for (const [hfName, t] of readTensors(opts.safetensors)) {
    // TextModel.filter_tensors: multimodal tensors skipped; ModelBase.filter_tensors: language_model. removed.
    if (hfName.includes('visual.') || hfName.includes('vision.')) continue;
    // _QwenMtpMixin.filter_tensors under --no-mtp: the MTP block dropped.
    if (hfName.startsWith('mtp.') || hfName.startsWith('model.mtp.')) continue;
    let name = hfName.replace('language_model.', '');
    let v = values(t);
    let shape = [...t.shape];
    // _LinearAttentionVReorderBase.modify_tensors.
    if (reorder && name.includes('linear_attn.')) {
      if (name.includes('.in_proj_qkv.')) {
        const lead = 2 * nk * hk;
        const cols = shape[1];
        const vPart = reorderVHeads(v.subarray(lead * cols), shape[0] - lead, cols, 0, nk, per, hv);
        v = Float32Array.from(v);
        v.set(vPart, lead * cols);
      } else if (name.includes('.in_proj_z.')) v = reorderVHeads(v, shape[0], shape[1], 0, nk, per, hv);
      else if (name.includes('.in_proj_b.') || name.includes('.in_proj_a.')) v = reorderVHeads(v, shape[0], shape[1], 0, nk, per, 1);
      else if (name.includes('.A_log') || name.includes('.dt_bias')) v = reorderVHeads(v, shape[0], 1, 0, nk, per, 1);
      else if (name.includes('.conv1d')) {
        // data.squeeze(), then the V channels after q and k.
        shape = shape.filter((d) => d !== 1);
        const lead = 2 * nk * hk;
        const K = shape[1];
        const vPart = reorderVHeads(v.subarray(lead * K), shape[0] - lead, K, 0, nk, per, hv);
        v = Float32Array.from(v);
        v.set(vPart, lead * K);
      } else if (name.includes('.out_proj.')) v = reorderVHeads(v, shape[0], shape[1], 1, nk, per, hv);
    }
    // Qwen3NextModel.modify_tensors.
    if (name.endsWith('.A_log')) {
      if (skip !== 'qwen35-a-exp') v = v.map((x) => -Math.exp(x));
    } else if (name.endsWith('.dt_bias')) name = name.replace(/\.dt_bias$/, '.dt_proj.bias');
    else if (name.includes('conv1d')) shape = shape.filter((d) => d !== 1);
    else if (name.endsWith('norm.weight') && !name.endsWith('linear_attn.norm.weight') && skip !== 'qwen35-norm-shift')
      v = v.map((x) => x + 1);
    // Qwen2MoeModel.modify_tensors: transformers 5's stacked experts as they are (gate_up_proj [E, 2I, H] split in
    // halves on dim −2); per-expert tensors stacked once a layer's are all read (down, gate, up).
    if (name.endsWith('mlp.experts.down_proj')) {
      write(`${name}.weight`, shape, v);
      continue;
    }
    if (name.endsWith('mlp.experts.gate_up_proj')) {
      const [E, twoI, H] = shape;
      const I = twoI / 2;
      const gate = new Float32Array(E * I * H);
      const up = new Float32Array(E * I * H);
      for (let e = 0; e < E; e++) {
        gate.set(v.subarray(e * twoI * H, (e * twoI + I) * H), e * I * H);
        up.set(v.subarray((e * twoI + I) * H, (e + 1) * twoI * H), e * I * H);
      }
      const base = name.replace(/\.gate_up_proj$/, '');
      write(`${base}.gate_proj.weight`, [E, I, H], gate);
      write(`${base}.up_proj.weight`, [E, I, H], up);
      continue;
    }
    const expert = /^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight$/.exec(name);
    if (expert) {
      experts.set(name, { ...t, name, data: new Uint8Array(v.buffer) });
      if ([...experts.keys()].filter((k) => k.startsWith(`model.layers.${expert[1]}.mlp.experts.`)).length < 3 * nExperts) continue;
      for (const w of ['down_proj', 'gate_proj', 'up_proj']) {
        const parts = Array.from(
          { length: nExperts },
          (_, e) => experts.get(`model.layers.${expert[1]}.mlp.experts.${e}.${w}.weight`) as Tensor,
        );
        const [rows, cols] = parts[0].shape;
        const stacked = new Float32Array(nExperts * rows * cols);
        parts.forEach((p, e) => stacked.set(new Float32Array(p.data.buffer, p.data.byteOffset, rows * cols), e * rows * cols));
        write(`model.layers.${expert[1]}.mlp.experts.${w}.weight`, [nExperts, rows, cols], stacked);
      }
      continue;
    }
    write(name, shape, v);
  }
  // Qwen2MoeModel → TextModel keys (feed_forward_length only where intermediate_size is set).
  g.key('block_count', num(c, 'num_hidden_layers'));
  g.key('context_length', num(c, 'max_position_embeddings'));
  g.key('embedding_length', num(c, 'hidden_size'));
  if (opt(c, 'intermediate_size') !== undefined) g.key('feed_forward_length', num(c, 'intermediate_size'));
  g.key('attention.head_count', num(c, 'num_attention_heads'));
  g.key('attention.head_count_kv', num(c, 'num_key_value_heads'));
  const rope = (c.rope_parameters ?? {}) as Json;
  // TextModel: mrope_section padded to four.
  if (Array.isArray(rope.mrope_section)) {
    const sections = [...(rope.mrope_section as number[])];
    while (sections.length < 4) sections.push(0);
    g.key('rope.dimension_sections', typedArray('i32', sections.slice(0, 4)));
  }
  g.key('rope.freq_base', f32(num(rope, 'rope_theta')));
  g.key('attention.layer_norm_rms_epsilon', f32(num(c, 'rms_norm_eps')));
  expertKeys(g, c);
  g.key('attention.key_length', num(c, 'head_dim'));
  g.key('attention.value_length', num(c, 'head_dim'));
  g.metadata['general.file_type'] = 0;
  if (isMoe) {
    g.key('expert_feed_forward_length', num(c, 'moe_intermediate_size'));
    g.key('expert_shared_feed_forward_length', num(c, 'shared_expert_intermediate_size'));
  }
  // Qwen3NextModel.set_gguf_parameters.
  g.key('ssm.conv_kernel', num(c, 'linear_conv_kernel_dim'));
  g.key('ssm.state_size', hk);
  g.key('ssm.group_count', nk);
  g.key('ssm.time_step_rank', nv);
  g.key('ssm.inner_size', hv * nv);
  const types = c.layer_types as string[] | undefined;
  if (types && skip !== 'qwen35-interval-only')
    g.key(
      'attention.recurrent_layers',
      typedArray(
        'bool',
        types.map((t) => t === 'linear_attention'),
      ),
    );
  g.key('full_attention_interval', opt(c, 'full_attention_interval') ?? 4);
  const partial = opt(rope, 'partial_rotary_factor') ?? 0.25;
  g.key('rope.dimension_count', Math.trunc(num(c, 'head_dim') * partial));
  writeGguf(opts.out, { metadata: g.metadata, tensors: g.tensors });
}
