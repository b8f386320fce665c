// Mixtral (MixtralForCausalLM): Mistral's attention (sliding window when the config sets one) with
// every layer's MLP replaced by routed experts (block_sparse_moe: softmax → top-k → renormalised;
// each expert's width is intermediate_size). llama.cpp writes Mixtral GGUFs as general.architecture
// 'llama' with llama.expert_count set (Q/K rows interleaved, as for Llama): the registry sends
// those here by their expert count.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const mixtral: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: true,
  experts: { hfWidthKey: 'intermediate_size', normTopkProb: 'always' },
  decoderOptions: (config) => ({
    qkvBias: 'none',
    oBiasIfPresent: false,
    qkNorm: false,
    slidingWindow: config.slidingWindow,
  }),
  create: (checkpoint, ops, options) => new DecoderTransformer(checkpoint, ops, mixtral.decoderOptions(checkpoint.config), options),
};
