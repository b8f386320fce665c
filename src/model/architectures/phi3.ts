// Phi-3 (Phi3ForCausalLM; Phi-3 / Phi-3.5 mini and medium, Phi-4-mini): Llama-shaped, without
// biases, with q/k/v fused into self_attn.qkv_proj and gate/up into mlp.gate_up_proj (split into
// row blocks at load, not copied; decoder-layer.ts), sliding-window attention when the config sets
// sliding_window, partial rotary (partial_rotary_factor) and LongRoPE (rope_scaling longrope with
// short_factor / long_factor; rotary.ts says when each applies).
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';
import { rotaryOptions } from './rotary.js';

export const phi3: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
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
