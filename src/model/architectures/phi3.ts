// Phi-3 (Phi3ForCausalLM; Phi-3 / Phi-3.5 mini and medium, Phi-4-mini): Llama-shaped, without
// biases, with q/k/v fused into self_attn.qkv_proj and gate/up into mlp.gate_up_proj (split into
// row blocks at load, not copied; decoder-layer.ts), sliding-window attention when the config sets
// sliding_window, partial rotary (partial_rotary_factor) and LongRoPE (rope_scaling longrope with
// short_factor / long_factor; rotary.ts says when each applies).
// GGUF (llama.cpp's 'phi3'): attn_qkv and ffn_up are the fused tensors under other names
// (loaders/gguf-names.ts); ggufPhi3Config reads the partial rotary width and LongRoPE.
import type { ModelConfig } from '../types.js';
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule, GgufConfigReader } from './model.js';
import { rotaryOptions } from './rotary.js';

/**
 * Phi3MiniModel.set_gguf_parameters / generate_extra_tensors: `rope.dimension_count` (int(partial
 * factor · hidden) // heads), and for LongRoPE the factors as tensors rope_factors_long / _short (one
 * per rotary frequency), `rope.scaling.attn_factor` and `rope.scaling.original_context_length`.
 * (llama.cpp picks the long factors for a whole context larger than the original; svc keeps
 * transformers' per-sequence choice, rotary.ts.)
 */
function ggufPhi3Config(g: GgufConfigReader, c: ModelConfig): Partial<ModelConfig> {
  const rotaryDim = g.num('rope.dimension_count') ?? c.headDim;
  if (rotaryDim < 2 || rotaryDim % 2 !== 0 || rotaryDim > c.headDim)
    throw new Error(`rope.dimension_count ${rotaryDim} of head size ${c.headDim}`);
  const out: Partial<ModelConfig> = rotaryDim < c.headDim ? { rotaryDim } : {};
  const long = g.tensor('rope_factors_long.weight');
  const short = g.tensor('rope_factors_short.weight');
  if (!long && !short) return out;
  if (!long || !short || long.length !== rotaryDim / 2 || short.length !== rotaryDim / 2) {
    throw new Error(`rope_factors_long / rope_factors_short must both hold ${rotaryDim / 2} factors`);
  }
  const original = g.num('rope.scaling.original_context_length');
  if (original === undefined) throw new Error('LongRoPE factors without rope.scaling.original_context_length');
  out.longRope = {
    shortFactor: Array.from(short),
    longFactor: Array.from(long),
    originalMaxPositionEmbeddings: original,
    attentionFactor: g.num('rope.scaling.attn_factor') ?? 1,
  };
  return out;
}

export const phi3: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  ggufConfig: ggufPhi3Config,
  decoderOptions: (config) => {
    const rotary = rotaryOptions(config);
    return {
      qkvBias: 'none',
      oBiasIfPresent: false,
      qkNorm: false,
      slidingWindow: config.slidingWindow,
      ...(rotary ? { rotary } : {}),
    };
  },
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, phi3.decoderOptions(checkpoint.config)),
};
