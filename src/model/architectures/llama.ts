// Llama (LlamaForCausalLM; SmolLM2 checkpoints too): the plain decoder. HF's attention_bias puts
// biases on q/k/v/o, so load them when present.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const llama: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: true,
  decoderOptions: (config) => ({
    qkvBias: config.attentionBias ? 'required' : 'if-present',
    oBiasIfPresent: true,
    qkNorm: false,
    slidingWindow: null,
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, llama.decoderOptions(checkpoint.config)),
};
