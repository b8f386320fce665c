// Llama (LlamaForCausalLM): the plain decoder. HF's attention_bias puts biases on q/k/v/o, so load them when present.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { DecoderTransformer } from './decoder.js';
import type { Model } from './model.js';

export function createLlama(checkpoint: Checkpoint, ops: Ops): Model {
  return new DecoderTransformer(checkpoint, ops, {
    qkvBias: checkpoint.config.attentionBias ? 'required' : 'if-present',
    oBiasIfPresent: true,
    qkNorm: false,
    slidingWindow: null,
  });
}
