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
import { typed, writeGguf, type GgufMetadataValue, type GgufTensorInput } from '../../src/model/loaders/gguf-writer.js';
import type { Tensor } from '../../src/model/types.js';

type Json = Record<string, unknown>;

export type GgufFamily = 'gemma2' | 'gemma3' | 'olmo2' | 'phi3' | 'mamba2';

/** Transformations a test may leave out. */
export type GgufSkip =
  | 'gemma-norm-shift'
  | 'mamba-a-exp'
  | 'phi3-fused-names'
  | 'phi3-rope-factors'
  /** The opposite: Q/K rows interleaved as LlamaModel.permute does, which TextModel families (OLMo 2, Gemma, Phi-3) do not get. */
  | 'llama-qk-permute';

export interface HfToGgufOptions {
  family: GgufFamily;
  safetensors: string;
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
const FAMILY_NAMES: Record<GgufFamily, [RegExp, string][]> = {
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

function mapName(family: GgufFamily, name: string, skip: GgufSkip | undefined): string {
  let table = [...FAMILY_NAMES[family], ...DECODER_NAMES];
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

/** Reads the fixture's tensors under their checkpoint names. */
function readTensors(path: string): Map<string, Tensor> {
  return parseSafetensors(new Uint8Array(readFileSync(path)), path).tensors;
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
