// Architecture registry: picks the forward pass for a checkpoint's architecture.
import type { Ops } from '../../kernels/ops.js';
import type { ArchitectureName, Checkpoint } from '../types.js';
import type { Model } from './model.js';
import { createLlama } from './llama.js';
import { createMistral } from './mistral.js';
import { createQwen2 } from './qwen2.js';
import { createQwen3 } from './qwen3.js';
import { createSmolLM2 } from './smollm2.js';

export type { ForwardBatch, Model } from './model.js';

const ARCHITECTURES: Record<ArchitectureName, (checkpoint: Checkpoint, ops: Ops) => Model> = {
  llama: createLlama,
  mistral: createMistral,
  qwen2: createQwen2,
  qwen3: createQwen3,
  smollm2: createSmolLM2,
};

/** Builds the model for `checkpoint`, preparing its weights for `ops` once, here. */
export function createModel(checkpoint: Checkpoint, ops: Ops): Model {
  const create = ARCHITECTURES[checkpoint.config.architecture];
  if (!create) throw new Error(`unsupported architecture ${String(checkpoint.config.architecture)}`);
  return create(checkpoint, ops);
}
