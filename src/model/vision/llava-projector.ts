// LLaVA's multi_modal_projector (transformers' LlavaMultiModalProjector): linear_1 → GELU → linear_2,
// from the tower's selected features to the language model's hidden size.
import type { GeluKind, Ops, WeightMatrix } from '../../kernels/ops.js';
import type { CheckpointWeights } from '../architectures/weights.js';

export class LlavaProjector {
  private readonly w1: WeightMatrix;
  private readonly b1: Float32Array | undefined;
  private readonly w2: WeightMatrix;
  private readonly b2: Float32Array | undefined;

  constructor(
    w: CheckpointWeights,
    prefix: string,
    inDim: number,
    readonly outDim: number,
    private readonly act: GeluKind,
    bias: boolean,
    private readonly ops: Ops,
  ) {
    this.w1 = w.matrix(`${prefix}linear_1.weight`, outDim, inDim);
    this.w2 = w.matrix(`${prefix}linear_2.weight`, outDim, outDim);
    this.b1 = bias ? w.vector(`${prefix}linear_1.bias`, outDim) : undefined;
    this.b2 = bias ? w.vector(`${prefix}linear_2.bias`, outDim) : undefined;
  }

  /** features [rows, inDim] → a new [rows, outDim]. */
  project(features: Float32Array, rows: number): Float32Array {
    const mid = new Float32Array(rows * this.outDim);
    this.ops.matmul(features, rows, this.w1, mid, this.b1);
    this.ops.gelu(mid, mid, mid.length, this.act);
    const out = new Float32Array(rows * this.outDim);
    this.ops.matmul(mid, rows, this.w2, out, this.b2);
    return out;
  }
}
