// GraniteMoe (GraniteMoeForCausalLM; Granite 3.x MoE) and GraniteMoeShared
// (GraniteMoeSharedForCausalLM): Granite's attention and multipliers (granite.ts) with every layer's
// MLP replaced by routed experts, block_sparse_moe: router.layer, experts fused as input_linear
// [E, 2I, H] (gate rows, then up rows) and output_linear [E, H, I], each of intermediate_size
// (expert-weights.ts). HF's TopKGating takes the top k router logits and softmaxes over those k,
// which is the softmax over all experts renormalised over the k (routeTopK with renormalisation:
// normTopkProb 'always'). GraniteMoeShared adds a shared dense expert of shared_intermediate_size
// (shared_mlp.input_linear / output_linear) to the routed output, before the residual multiplier.
import { DecoderTransformer } from './decoder.js';
import { granite } from './granite.js';
import type { ArchitectureModule } from './model.js';

export const graniteMoe: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: true,
  experts: { hfWidthKey: 'intermediate_size', normTopkProb: 'always', hfSharedWidthKey: 'shared_intermediate_size' },
  decoderOptions: (config) => granite.decoderOptions(config),
  create: (checkpoint, ops, options) => new DecoderTransformer(checkpoint, ops, graniteMoe.decoderOptions(checkpoint.config), options),
};
