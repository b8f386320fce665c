// Qwen3 (Qwen3ForCausalLM): per-head RMSNorm on q and k before RoPE; head_dim is independent of
// hidden_size / num_heads (q_proj is [numHeads·headDim, hidden]); biases follow attention_bias.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const qwen3: ArchitectureModule = {
  hfSlidingWindow: 'use_sliding_window',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  decoderOptions: (config) => ({
    qkvBias: config.attentionBias ? 'required' : 'none',
    oBiasIfPresent: config.attentionBias,
    qkNorm: true,
    slidingWindow: config.slidingWindow,
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, qwen3.decoderOptions(checkpoint.config)),
};
