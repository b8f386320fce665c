// Gemma 2 (Gemma2ForCausalLM) and Gemma 3's language model (Gemma3ForCausalLM, model_type gemma3_text;
// a Gemma3ForConditionalGeneration checkpoint runs its text_config, the vision tower left unread):
// the Llama decoder with
//  - RMSNorm weights scaling by (1 + w) (normWeightOffset 1), on both sides of each sublayer:
//    input_layernorm → attention → post_attention_layernorm → residual, pre_feedforward_layernorm →
//    MLP → post_feedforward_layernorm → residual;
//  - token embeddings times sqrt(hidden_size), rounded to the activations' dtype as HF casts it;
//  - a GELU-gated MLP (hidden_activation gelu_pytorch_tanh: down(gelu_tanh(gate·x) ⊙ up·x));
//  - softmax scale query_pre_attn_scalar^-0.5; Gemma 2's tanh soft-capping of the attention scores
//    (attn_logit_softcapping) and of the final logits (final_logit_softcapping);
//  - sliding-window and full-attention layers (layer_types, else the family's pattern: Gemma 2
//    alternates starting with a sliding layer, Gemma 3 has sliding_window_pattern − 1 sliding layers
//    then a full one);
//  - Gemma 3: per-head q/k RMSNorm ((1 + w) too), and local (sliding) layers on their own RoPE base
//    (rope_local_base_freq) while global ones take rope_theta with rope_scaling's linear factor.
// GGUF (llama.cpp's 'gemma2' / 'gemma3'): the norms' stored + 1 is taken off by the loader
// (loaders/gguf-names.ts); ggufGemmaConfig reads the keys the converter writes and, where the file says
// nothing, applies llama.cpp's own rules (sliding pattern, softmax scale, soft-cap defaults).
import type { ModelConfig } from '../types.js';
import { DecoderTransformer, type DecoderOptions } from './decoder.js';
import type { ArchitectureModule, GgufConfigReader } from './model.js';

type Json = Readonly<Record<string, unknown>>;

/** Gemma2Config's defaults (transformers), for keys a config.json leaves out. */
const GEMMA2_DEFAULTS: Json = {
  vocab_size: 256000,
  hidden_size: 2304,
  intermediate_size: 9216,
  num_hidden_layers: 26,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  max_position_embeddings: 8192,
  rms_norm_eps: 1e-6,
  bos_token_id: 2,
  eos_token_id: 1,
  tie_word_embeddings: true,
  query_pre_attn_scalar: 256,
  sliding_window: 4096,
  final_logit_softcapping: 30.0,
  attn_logit_softcapping: 50.0,
};

/**
 * Gemma3TextConfig's defaults (transformers): a Gemma 3 wrapper's text_config gives only what differs.
 * (rope_theta, 1e6, is not here: transformers 5 configs give it under rope_parameters instead.)
 */
const GEMMA3_DEFAULTS: Json = {
  vocab_size: 262208,
  hidden_size: 2304,
  intermediate_size: 9216,
  num_hidden_layers: 26,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  max_position_embeddings: 131072,
  rms_norm_eps: 1e-6,
  bos_token_id: 2,
  eos_token_id: 1,
  tie_word_embeddings: true,
  rope_local_base_freq: 10000,
  query_pre_attn_scalar: 256,
  sliding_window: 4096,
  sliding_window_pattern: 6,
  final_logit_softcapping: null,
  attn_logit_softcapping: null,
};

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A positive number, or undefined for null / absent (a soft-cap that is off). */
function optionalPositive(raw: Json, key: string): number | undefined {
  const v = raw[key];
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'number' || !(v > 0)) throw new Error(`${key} must be a positive number or null, got ${JSON.stringify(v)}`);
  return v;
}

function positive(raw: Json, key: string): number {
  const v = optionalPositive(raw, key);
  if (v === undefined) throw new Error(`missing ${key}`);
  return v;
}

/** hidden_activation (hidden_act in older configs) → the GELU the MLP gates with. */
function mlpGelu(raw: Json): 'erf' | 'tanh' {
  const act = raw.hidden_activation ?? raw.hidden_act ?? 'gelu_pytorch_tanh';
  if (act === 'gelu_pytorch_tanh' || act === 'gelu_new' || act === 'gelu_fast') return 'tanh';
  if (act === 'gelu') return 'erf';
  throw new Error(`hidden_activation ${JSON.stringify(act)} is not supported (gelu_pytorch_tanh or gelu)`);
}

/** layer_types when given (sliding_attention / full_attention), else layer i is sliding unless (i + 1) % pattern == 0. */
function layerTypes(raw: Json, numLayers: number, pattern: number): ('sliding' | 'full')[] {
  const given = raw.layer_types;
  if (Array.isArray(given)) {
    if (given.length !== numLayers) throw new Error(`layer_types has ${given.length} entries for ${numLayers} layers`);
    return given.map((t) => {
      if (t === 'sliding_attention') return 'sliding';
      if (t === 'full_attention') return 'full';
      throw new Error(`layer_types entry ${JSON.stringify(t)} is not sliding_attention or full_attention`);
    });
  }
  if (!Number.isInteger(pattern) || pattern < 1) throw new Error(`sliding_window_pattern ${pattern} is not a positive integer`);
  return Array.from({ length: numLayers }, (_, i) => ((i + 1) % pattern !== 0 ? 'sliding' : 'full'));
}

/**
 * A RoPE parameter set's linear factor: 1 for the default type, `factor` for 'linear'; other
 * scalings (YaRN, dynamic…) are not supported here.
 */
function linearFactor(params: unknown, where: string): number {
  if (!isObject(params)) return 1;
  const type = params.rope_type ?? params.type ?? 'default';
  if (type === 'default') return 1;
  if (type !== 'linear') throw new Error(`${where} rope_type ${JSON.stringify(type)} is not supported (default or linear)`);
  const factor = params.factor;
  if (typeof factor !== 'number' || !(factor > 0)) throw new Error(`${where} linear factor ${JSON.stringify(factor)} is not positive`);
  return factor;
}

/** The config fields both Gemmas read alike. */
function gemmaCommon(raw: Json, pattern: number): Partial<ModelConfig> {
  const numLayers = raw.num_hidden_layers as number;
  const attn = optionalPositive(raw, 'attn_logit_softcapping');
  const final = optionalPositive(raw, 'final_logit_softcapping');
  return {
    layerAttention: layerTypes(raw, numLayers, pattern),
    slidingWindow: positive(raw, 'sliding_window'),
    queryPreAttnScalar: positive(raw, 'query_pre_attn_scalar'),
    ...(attn !== undefined ? { attnLogitSoftcapping: attn } : {}),
    ...(final !== undefined ? { finalLogitSoftcapping: final } : {}),
    mlpGelu: mlpGelu(raw),
  };
}

function gemma2HfConfig(raw: Json): Partial<ModelConfig> {
  if (isObject(raw.rope_scaling) && linearFactor(raw.rope_scaling, 'rope_scaling') !== 1) {
    throw new Error('rope_scaling is not supported for Gemma 2');
  }
  return gemmaCommon(raw, 2);
}

/**
 * Gemma 3's RoPE: transformers 4 keys (rope_theta, rope_local_base_freq, rope_scaling on the global
 * layers) or transformers 5's rope_parameters keyed by layer type.
 */
function gemma3HfConfig(raw: Json): Partial<ModelConfig> {
  const common = gemmaCommon(raw, raw.sliding_window_pattern as number);
  const params = raw.rope_parameters;
  let global = typeof raw.rope_theta === 'number' ? raw.rope_theta : 1_000_000;
  let local = raw.rope_local_base_freq as number;
  let factor = linearFactor(raw.rope_scaling, 'rope_scaling');
  if (isObject(params) && (isObject(params.full_attention) || isObject(params.sliding_attention))) {
    const full = params.full_attention,
      sliding = params.sliding_attention;
    if (isObject(full)) {
      if (typeof full.rope_theta === 'number') global = full.rope_theta;
      factor = linearFactor(full, 'rope_parameters.full_attention');
    }
    if (isObject(sliding)) {
      if (typeof sliding.rope_theta === 'number') local = sliding.rope_theta;
      if (linearFactor(sliding, 'rope_parameters.sliding_attention') !== 1)
        throw new Error('scaled RoPE on sliding layers is not supported');
    }
  }
  if (!(global > 0) || !(local > 0)) throw new Error(`RoPE bases ${global} (global) and ${local} (local) must be positive`);
  return { ...common, ropeTheta: global, ropeLocalTheta: local, ...(factor !== 1 ? { ropeLinearFactor: factor } : {}) };
}

/**
 * A Gemma GGUF's family fields, as llama.cpp's llama_model_gemma2 / gemma3 load_arch_hparams read them:
 *  - sliding layers: `<arch>.attention.sliding_window_pattern` (a per-layer bool array, or a period n:
 *    layer i slides when i % n < n − 1), else period 2 (Gemma 2) / 6 (Gemma 3, and only when
 *    `attention.sliding_window` is set); the window from `attention.sliding_window` (Gemma 2: 4096);
 *  - softmax scale: the converters write no query_pre_attn_scalar; llama.cpp takes head_dim^-0.5, or
 *    (hidden / heads)^-0.5 for the 27B models (46 layers for Gemma 2, 62 for Gemma 3) — which is what
 *    their config.json's query_pre_attn_scalar says for every released size;
 *  - Gemma 2: `attn_logit_softcapping` / `final_logit_softcapping` (llama.cpp's defaults 50 / 30 when
 *    absent); Gemma 3: `final_logit_softcapping` when present, `rope.freq_base_swa` for the local layers
 *    (else the global base), `rope.scaling.type` linear with `rope.scaling.factor` on the global layers;
 *  - the MLP's GELU is the tanh approximation (ggml_gelu).
 */
function ggufGemmaConfig(g: GgufConfigReader, c: ModelConfig, generation: 2 | 3): Partial<ModelConfig> {
  const window = g.num('attention.sliding_window');
  const slides = generation === 2 || (window !== undefined && window > 0);
  const pattern = g.value('attention.sliding_window_pattern');
  let layerAttention: ('sliding' | 'full')[] | undefined;
  if (slides) {
    if (typeof pattern === 'object' && pattern !== null && 'length' in pattern) {
      const flags = Array.from(pattern as ArrayLike<unknown>);
      if (flags.length !== c.numLayers)
        throw new Error(`attention.sliding_window_pattern has ${flags.length} entries for ${c.numLayers} layers`);
      layerAttention = flags.map((f) => (f ? 'sliding' : 'full'));
    } else {
      const n = g.num('attention.sliding_window_pattern') ?? (generation === 2 ? 2 : 6);
      layerAttention = Array.from({ length: c.numLayers }, (_, i) => (n === 0 || i % n < n - 1 ? 'sliding' : 'full'));
    }
  }
  const big = c.numLayers === (generation === 2 ? 46 : 62);
  const out: Partial<ModelConfig> = {
    ...(layerAttention ? { layerAttention, slidingWindow: window ?? 4096 } : { slidingWindow: null }),
    queryPreAttnScalar: big ? c.hiddenSize / c.numHeads : c.headDim,
    mlpGelu: 'tanh',
  };
  const final = g.num('final_logit_softcapping');
  if (generation === 2) {
    out.attnLogitSoftcapping = g.num('attn_logit_softcapping') ?? 50;
    out.finalLogitSoftcapping = final ?? 30;
    return out;
  }
  if (final !== undefined && final > 0) out.finalLogitSoftcapping = final;
  out.ropeLocalTheta = g.num('rope.freq_base_swa') ?? c.ropeTheta;
  const scaling = g.value('rope.scaling.type');
  const factor = g.num('rope.scaling.factor');
  if (scaling === 'linear' && factor !== undefined && factor !== 1) out.ropeLinearFactor = factor;
  else if (scaling !== undefined && scaling !== 'none' && scaling !== 'linear')
    throw new Error(`rope.scaling.type ${String(scaling)} is not supported`);
  return out;
}

/** The decoder options of a Gemma config (both generations: the config says which parts apply). */
export function gemmaDecoderOptions(config: ModelConfig, qkNorm: boolean): DecoderOptions {
  const types = config.layerAttention;
  const window = config.slidingWindow;
  const global = { theta: config.ropeTheta, linearFactor: config.ropeLinearFactor ?? 1 };
  const local = { theta: config.ropeLocalTheta ?? config.ropeTheta, linearFactor: 1 };
  return {
    qkvBias: config.attentionBias ? 'required' : 'none',
    oBiasIfPresent: config.attentionBias,
    qkNorm,
    slidingWindow: types ? null : window,
    normPlacement: 'sandwich',
    normWeightOffset: 1,
    // HF: torch.tensor(hidden_size ** 0.5, dtype=hidden_states.dtype).
    embeddingScale: Math.fround(Math.sqrt(config.hiddenSize)),
    attentionScale: (config.queryPreAttnScalar ?? config.headDim) ** -0.5,
    attentionSoftcap: config.attnLogitSoftcapping ?? null,
    finalSoftcap: config.finalLogitSoftcapping ?? null,
    ...(types
      ? {
          layerSlidingWindow: types.map((t) => (t === 'sliding' ? window : null)),
          layerRope: types.map((t) => (t === 'sliding' ? local : global)),
        }
      : {}),
    mlpActivation: config.mlpGelu ?? 'tanh',
  };
}

export const gemma2: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  hfDefaults: GEMMA2_DEFAULTS,
  hfConfig: gemma2HfConfig,
  ggufConfig: (g, c) => ggufGemmaConfig(g, c, 2),
  decoderOptions: (config) => gemmaDecoderOptions(config, false),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, gemma2.decoderOptions(checkpoint.config)),
};

export const gemma3: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  hfDefaults: GEMMA3_DEFAULTS,
  hfConfig: gemma3HfConfig,
  ggufConfig: (g, c) => ggufGemmaConfig(g, c, 3),
  decoderOptions: (config) => gemmaDecoderOptions(config, true),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, gemma3.decoderOptions(checkpoint.config)),
};
