// Qwen3 (Qwen3ForCausalLM): per-head RMSNorm on q and k before RoPE; head_dim is independent of
// hidden_size / num_heads (q_proj is [numHeads·headDim, hidden]); biases follow attention_bias.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { DecoderTransformer } from './decoder.js';
import type { Model } from './model.js';

export function createQwen3(checkpoint: Checkpoint, ops: Ops): Model {
  const bias = checkpoint.config.attentionBias;
  return new DecoderTransformer(checkpoint, ops, {
    qkvBias: bias ? 'required' : 'none',
    oBiasIfPresent: bias,
    qkNorm: true,
    slidingWindow: checkpoint.config.slidingWindow,
  });
}
