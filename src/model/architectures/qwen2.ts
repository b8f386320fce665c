// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama with biases on q/k/v (always, not configurable), none on o_proj.
// The config's slidingWindow is applied only when the loader set it (use_sliding_window); HF's
// max_window_layers split (full attention in the lower layers) is not modelled.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { DecoderTransformer } from './decoder.js';
import type { Model } from './model.js';

export function createQwen2(checkpoint: Checkpoint, ops: Ops): Model {
  return new DecoderTransformer(checkpoint, ops, {
    qkvBias: 'required',
    oBiasIfPresent: false,
    qkNorm: false,
    slidingWindow: checkpoint.config.slidingWindow,
  });
}
