// Mistral (MistralForCausalLM): Llama without biases, with sliding-window attention when the config sets one.
// (llama.cpp writes Mistral GGUFs as general.architecture 'llama', so those run as Llama.)
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const mistral: ArchitectureModule = {
  hfSlidingWindow: 'always',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  decoderOptions: (config) => ({
    qkvBias: 'none',
    oBiasIfPresent: false,
    qkNorm: false,
    slidingWindow: config.slidingWindow,
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, mistral.decoderOptions(checkpoint.config)),
};
