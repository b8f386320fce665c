// Qwen3-MoE (Qwen3MoeForCausalLM; Qwen3-30B-A3B, Qwen3-Coder-30B-A3B): Qwen3's attention (q/k
// norms, head_dim of its own) with routed experts of moe_intermediate_size in the layers
// decoder_sparse_step and mlp_only_layers pick (the others keep a dense MLP of intermediate_size);
// top-k weights renormalised when norm_topk_prob is set. GGUF: general.architecture 'qwen3moe'.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';
import { qwen3 } from './qwen3.js';

export const qwen3Moe: ArchitectureModule = {
  hfSlidingWindow: 'use_sliding_window',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  experts: { hfWidthKey: 'moe_intermediate_size', normTopkProb: 'config' },
  decoderOptions: (config) => qwen3.decoderOptions(config),
  create: (checkpoint, ops, options) => new DecoderTransformer(checkpoint, ops, qwen3Moe.decoderOptions(checkpoint.config), options),
};
