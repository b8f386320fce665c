// GPT-OSS (GptOssForCausalLM, model_type gpt_oss), as transformers' modeling_gpt_oss runs it: the
// Llama decoder (pre-RMSNorm, GQA, neox RoPE) with
//  - q / k / v / o biases;
//  - sliding-window and full-attention layers (config layer_types; sliding_window);
//  - attention sinks: each layer's self_attn.sinks [numHeads] joins the softmax as one more logit
//    whose share is dropped (AttentionParams.sinks);
//  - YaRN RoPE (rope_scaling / rope_parameters, yarn.ts) on every layer;
//  - every layer MoE: router mlp.router.{weight, bias}; top-k over the router logits, softmax over those
//    k (= routeTopK renormalised); experts mlp.experts.gate_up_proj [E, H, 2I] (x · W: columns, gate
//    and up interleaved — gate column 2j, up 2j + 1), gate_up_proj_bias [E, 2I], down_proj [E, I, H],
//    down_proj_bias [E, H]; the activation is the clamped SwiGLU (ops.moe's MoeActivation, alpha 1.702,
//    limit 7). The stacked tensors are transposed to per-expert [out, in] matrices at load (a copy,
//    in the checkpoint's dtype: f32, or bf16 — MXFP4 checkpoints arrive as bf16, loaders/mxfp4.ts).
// Chat: GPT-OSS writes OpenAI harmony channels; svc has no harmony template or parser (registry/gpt-oss.toml).
// GGUF (llama.cpp 'gpt-oss', conversion/gpt_oss.py GptOssModel): the loader rebuilds gate_up_proj / its bias /
// down_proj from ffn_{gate,up,down}_exps (ggml MXFP4 experts decoded to bf16; loaders/gguf-names.ts, mxfp4.ts);
// ggufGptOssConfig reads the sliding window, layer pattern (attention.sliding_window_pattern, else llama.cpp's
// 2: even layers sliding) and YaRN. What a file cannot carry: YaRN's `truncate` (ggml floors / ceils the
// correction range: truncate true) and swiglu_limit (llama.cpp's graph has 7 built in).
import type { MoeExperts, WeightMatrix } from '../../kernels/ops.js';
import type { ModelConfig } from '../types.js';
import { f32ToBf16 } from '../../kernels/dequant.js';
import { DecoderTransformer, type DecoderOptions } from './decoder.js';
import { expertRange, type ModelOptions } from './expert-placement.js';
import { expertShape } from './expert-weights.js';
import type { ArchitectureModule, GgufConfigReader } from './model.js';
import { MoeBlock } from './moe.js';
import type { CheckpointWeights } from './weights.js';
import { readYarnRope, yarnMscale, yarnRopeFrequencies } from './yarn.js';

type Json = Readonly<Record<string, unknown>>;

/**
 * GptOssConfig's defaults (transformers), for keys a config.json leaves out. (rope_theta, 150000, is not
 * here: transformers 5 configs give it under rope_parameters, which a top-level default would override.)
 */
const GPT_OSS_DEFAULTS: Json = {
  num_hidden_layers: 36,
  num_local_experts: 128,
  vocab_size: 201088,
  hidden_size: 2880,
  intermediate_size: 2880,
  head_dim: 64,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  sliding_window: 128,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 131072,
  num_experts_per_tok: 4,
  attention_bias: true,
  tie_word_embeddings: false,
  swiglu_limit: 7.0,
};

/** transformers' GptOssExperts constants. */
export const GPT_OSS_ALPHA = 1.702;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** layer_types (sliding_attention / full_attention), else transformers' default: even layers sliding, odd full. */
function gptOssLayerTypes(raw: Json, numLayers: number): ('sliding' | 'full')[] {
  const given = raw.layer_types;
  if (!Array.isArray(given)) return Array.from({ length: numLayers }, (_, i) => (i % 2 === 0 ? 'sliding' : 'full'));
  if (given.length !== numLayers) throw new Error(`layer_types has ${given.length} entries for ${numLayers} layers`);
  return given.map((t) => {
    if (t === 'sliding_attention') return 'sliding';
    if (t === 'full_attention') return 'full';
    throw new Error(`layer_types entry ${JSON.stringify(t)} is not sliding_attention or full_attention`);
  });
}

function gptOssHfConfig(raw: Json): Partial<ModelConfig> {
  const numLayers = raw.num_hidden_layers as number;
  const window = raw.sliding_window;
  if (typeof window !== 'number' || !Number.isInteger(window) || window < 1) {
    throw new Error(`sliding_window must be a positive integer, got ${JSON.stringify(window)}`);
  }
  const limit = raw.swiglu_limit;
  if (typeof limit !== 'number' || !(limit > 0)) throw new Error(`swiglu_limit must be positive, got ${JSON.stringify(limit)}`);
  const out: Partial<ModelConfig> = { layerAttention: gptOssLayerTypes(raw, numLayers), slidingWindow: window, swigluLimit: limit };
  // transformers 5 keeps rope_theta and the scaling under rope_parameters; 4.x: rope_theta and rope_scaling.
  const rope = [raw.rope_parameters, raw.rope_scaling].find(isObject);
  const type = rope ? (rope.rope_type ?? rope.type ?? 'default') : 'default';
  if (rope && type === 'yarn') out.yarnRope = readYarnRope(rope, raw.max_position_embeddings as number);
  else if (type !== 'default') throw new Error(`rope type ${JSON.stringify(type)} is not supported for GPT-OSS (yarn or default)`);
  return out;
}

/** A llama.cpp 'gpt-oss' file's keys (GptOssModel.set_gguf_parameters; read as src/models/openai-moe.cpp does). */
function ggufGptOssConfig(g: GgufConfigReader, c: ModelConfig): Partial<ModelConfig> {
  const window = g.num('attention.sliding_window');
  if (window === undefined || !Number.isInteger(window) || window < 1)
    throw new Error('attention.sliding_window must be a positive integer');
  const pattern = g.value('attention.sliding_window_pattern');
  let layerAttention: ('sliding' | 'full')[];
  if (typeof pattern === 'object' && pattern !== null && 'length' in pattern) {
    const flags = Array.from(pattern as ArrayLike<unknown>);
    if (flags.length !== c.numLayers)
      throw new Error(`attention.sliding_window_pattern has ${flags.length} entries for ${c.numLayers} layers`);
    layerAttention = flags.map((f) => (f ? 'sliding' : 'full'));
  } else {
    // llama_hparams::set_swa_pattern(n): layer i slides when i % n < n − 1 (n 0: every layer).
    const n = g.num('attention.sliding_window_pattern') ?? 2;
    layerAttention = Array.from({ length: c.numLayers }, (_, i) => (n === 0 || i % n < n - 1 ? 'sliding' : 'full'));
  }
  const out: Partial<ModelConfig> = { layerAttention, slidingWindow: window, swigluLimit: 7 };
  const type = g.value('rope.scaling.type');
  if (type === 'yarn') {
    const factor = g.num('rope.scaling.factor') ?? 1;
    out.yarnRope = {
      factor,
      originalMaxPositionEmbeddings: g.num('rope.scaling.original_context_length') ?? c.maxPositionEmbeddings,
      betaFast: g.num('rope.scaling.yarn_beta_fast') ?? 32,
      betaSlow: g.num('rope.scaling.yarn_beta_slow') ?? 1,
      truncate: true,
      // llama-context.cpp replaces the file's yarn_attn_factor under YaRN: cos / sin get 0.1·ln(factor) + 1,
      // times rope.scaling.attn_factor.
      attentionFactor: yarnMscale(factor) * (g.num('rope.scaling.attn_factor') ?? 1),
    };
  } else if (type !== undefined && type !== 'none') {
    throw new Error(`rope.scaling.type ${String(type)} is not supported for gpt-oss (yarn or none)`);
  }
  return out;
}

/**
 * GPT-OSS's MoE block of layer `layer`: router with bias; experts de-interleaved and transposed from
 * the stacked [E, H, 2I] / [E, I, H] tensors into [out, in] matrices (the range `placement` gives this
 * process, the others null), with their biases and the clamped SwiGLU.
 */
function loadGptOssMoe(w: CheckpointWeights, c: ModelConfig, layer: number, prefix: string, placement?: ModelOptions['experts']): MoeBlock {
  const s = expertShape(c);
  const [first, end] = placement ? expertRange(s.numExperts, placement.shard) : [0, s.numExperts];
  const E = s.numExperts,
    H = s.hidden,
    I = s.width;
  const base = `${prefix}mlp.`;
  const router = w.matrix(`${base}router.weight`, E, H);
  const routerBias = w.vector(`${base}router.bias`, E);
  const gateUpName = `${base}experts.gate_up_proj`;
  const downName = `${base}experts.down_proj`;
  // Weights in the checkpoint's dtype where the kernels take it as it is (bf16, f32); else f32.
  const dtypeOf = (name: string): 'bf16' | 'f32' => (w.dtype(name) === 'bf16' ? 'bf16' : 'f32');
  const gateUp = w.array(gateUpName, [E, H, 2 * I]);
  const gateUpBias = w.array(`${base}experts.gate_up_proj_bias`, [E, 2 * I]);
  const down = w.array(downName, [E, I, H]);
  const downBias = w.array(`${base}experts.down_proj_bias`, [E, H]);
  const none = (): null[] => new Array<null>(E).fill(null);
  const gate: (WeightMatrix | null)[] = none(),
    up: (WeightMatrix | null)[] = none(),
    downs: (WeightMatrix | null)[] = none();
  const gateB: (Float32Array | null)[] = none(),
    upB: (Float32Array | null)[] = none(),
    downB: (Float32Array | null)[] = none();
  for (let e = first; e < end; e++) {
    const g = new Float32Array(I * H),
      u = new Float32Array(I * H),
      d = new Float32Array(H * I);
    const gu = e * H * 2 * I;
    // gate_up[e][h][2j] is gate row j's column h; [2j + 1] up's.
    for (let h = 0; h < H; h++)
      for (let j = 0; j < I; j++) {
        g[j * H + h] = gateUp[gu + h * 2 * I + 2 * j];
        u[j * H + h] = gateUp[gu + h * 2 * I + 2 * j + 1];
      }
    // down[e][i][h] is row h's column i.
    for (let i = 0; i < I; i++) for (let h = 0; h < H; h++) d[h * I + i] = down[e * I * H + i * H + h];
    gate[e] = prepared(w, g, I, H, dtypeOf(gateUpName));
    up[e] = prepared(w, u, I, H, dtypeOf(gateUpName));
    downs[e] = prepared(w, d, H, I, dtypeOf(downName));
    const gb = new Float32Array(I),
      ub = new Float32Array(I);
    for (let j = 0; j < I; j++) {
      gb[j] = gateUpBias[e * 2 * I + 2 * j];
      ub[j] = gateUpBias[e * 2 * I + 2 * j + 1];
    }
    gateB[e] = gb;
    upB[e] = ub;
    downB[e] = downBias.slice(e * H, (e + 1) * H);
  }
  const experts: MoeExperts = {
    gate,
    up,
    down: downs,
    bias: { gate: gateB, up: upB, down: downB },
    activation: { kind: 'clamped-swiglu', alpha: GPT_OSS_ALPHA, limit: c.swigluLimit ?? 7 },
  };
  // transformers softmaxes the top-k logits: the renormalised top-k softmax.
  return new MoeBlock(layer, router, experts, s.perToken, true, placement?.remote ?? null, null, routerBias);
}

/** An f32 matrix [rows, cols] prepared in `dtype` (bf16: rounded, exact for bf16 / MXFP4 sources). */
function prepared(w: CheckpointWeights, values: Float32Array, rows: number, cols: number, dtype: 'bf16' | 'f32'): WeightMatrix {
  if (dtype === 'f32') return w.prepare({ dtype, rows, cols, data: new Uint8Array(values.buffer) });
  const bits = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) bits[i] = f32ToBf16(values[i]);
  return w.prepare({ dtype, rows, cols, data: new Uint8Array(bits.buffer) });
}

function gptOssDecoderOptions(c: ModelConfig): DecoderOptions {
  const layers = c.layerAttention;
  return {
    qkvBias: 'required',
    oBiasIfPresent: true,
    qkNorm: false,
    slidingWindow: null,
    ...(layers ? { layerSlidingWindow: layers.map((t) => (t === 'sliding' ? c.slidingWindow : null)) } : {}),
    ...(c.yarnRope ? { ropeFrequencies: yarnRopeFrequencies(c.headDim, c.ropeTheta, c.yarnRope) } : {}),
    attentionSinks: true,
    loadMoe: loadGptOssMoe,
  };
}

export const gptOss: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: true,
  ggufQkPermuted: false,
  experts: { hfWidthKey: 'intermediate_size', normTopkProb: 'always' },
  hfDefaults: GPT_OSS_DEFAULTS,
  hfConfig: gptOssHfConfig,
  ggufConfig: ggufGptOssConfig,
  decoderOptions: gptOssDecoderOptions,
  create: (checkpoint, ops, options) => new DecoderTransformer(checkpoint, ops, gptOssDecoderOptions(checkpoint.config), options),
};
