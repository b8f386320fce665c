// SmolLM2 is a Llama checkpoint (LlamaForCausalLM); its quirks (tied embeddings, rope_theta 1e5, bf16
// weights) are all carried by the config, so the Llama forward pass serves it unchanged.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { createLlama } from './llama.js';
import type { Model } from './model.js';

export function createSmolLM2(checkpoint: Checkpoint, ops: Ops): Model {
  return createLlama(checkpoint, ops);
}
