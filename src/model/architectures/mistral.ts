// Mistral (MistralForCausalLM): Llama without biases, with sliding-window attention when the config sets one.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { DecoderTransformer } from './decoder.js';
import type { Model } from './model.js';

export function createMistral(checkpoint: Checkpoint, ops: Ops): Model {
  return new DecoderTransformer(checkpoint, ops, {
    qkvBias: 'none',
    oBiasIfPresent: false,
    qkNorm: false,
    slidingWindow: checkpoint.config.slidingWindow,
  });
}
