// The biased LayerNorms and linears vision towers are made of, as read from a checkpoint.
import type { WeightMatrix } from '../../kernels/ops.js';
import type { CheckpointWeights } from '../architectures/weights.js';

export interface LayerNorm {
  readonly weight: Float32Array;
  readonly bias: Float32Array;
}

export interface Linear {
  readonly weight: WeightMatrix;
  readonly bias: Float32Array;
}

export function layerNorm(w: CheckpointWeights, prefix: string, dim: number): LayerNorm {
  return { weight: w.vector(`${prefix}.weight`, dim), bias: w.vector(`${prefix}.bias`, dim) };
}

export function linear(w: CheckpointWeights, prefix: string, rows: number, cols: number): Linear {
  return { weight: w.matrix(`${prefix}.weight`, rows, cols), bias: w.vector(`${prefix}.bias`, rows) };
}
