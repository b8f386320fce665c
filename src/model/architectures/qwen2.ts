// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama with biases on q/k/v (always, not configurable), none on o_proj.
// The config's slidingWindow is applied only when the loader set it (use_sliding_window); HF's
// max_window_layers split (full attention in the lower layers) is not modelled.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const qwen2: ArchitectureModule = {
  hfSlidingWindow: 'use_sliding_window',
  alwaysQkvBias: true,
  ggufQkPermuted: false,
  decoderOptions: (config) => ({
    qkvBias: 'required',
    oBiasIfPresent: false,
    qkNorm: false,
    slidingWindow: config.slidingWindow,
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, qwen2.decoderOptions(checkpoint.config)),
};
