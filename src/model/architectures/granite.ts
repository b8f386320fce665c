// Granite (GraniteForCausalLM; IBM Granite 3.x dense): Llama with four multipliers from its config —
// embedding_multiplier on the input embeddings, residual_multiplier on each sublayer's output before
// its residual add, attention_multiplier as the attention softmax scale (in place of head_dim^-0.5)
// and logits_scaling dividing the logits. transformers' GraniteConfig defaults each to 1.0 (so an
// absent attention_multiplier is a scale of 1, not head_dim^-0.5). Biases on q/k/v/o follow
// attention_bias, as Llama's.
import type { ModelConfig } from '../types.js';
import type { DecoderOptions } from './decoder-layer.js';
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

/** Granite's multipliers as DecoderOptions (GraniteMoe's too). */
export function graniteScales(config: ModelConfig): Partial<DecoderOptions> {
  return {
    attentionScale: config.attentionMultiplier ?? 1,
    embeddingMultiplier: config.embeddingMultiplier ?? 1,
    residualMultiplier: config.residualMultiplier ?? 1,
    logitsScaling: config.logitsScaling ?? 1,
  };
}

export const granite: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: true,
  decoderOptions: (config) => ({
    qkvBias: config.attentionBias ? 'required' : 'none',
    oBiasIfPresent: config.attentionBias,
    qkNorm: false,
    slidingWindow: null,
    ...graniteScales(config),
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, granite.decoderOptions(checkpoint.config)),
};
