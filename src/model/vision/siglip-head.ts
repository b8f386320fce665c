// SigLIP's attention-pooling head (transformers' SiglipMultiheadAttentionPoolingHead): a learned
// probe query attends over the tower's last_hidden_state (nn.MultiheadAttention, its q / k / v
// fused in in_proj_weight), then a residual MLP block with its own LayerNorm; the probe's row is
// the image embedding (SiglipModel's image_embeds, before normalisation).
import type { Ops, WeightMatrix } from '../../kernels/ops.js';
import type { CheckpointWeights } from '../architectures/weights.js';
import type { VisionTowerConfig } from './vision-config.js';

export class SiglipPoolingHead {
  private readonly probe: Float32Array;
  private readonly wq: WeightMatrix;
  private readonly wk: WeightMatrix;
  private readonly wv: WeightMatrix;
  private readonly bq: Float32Array;
  private readonly bk: Float32Array;
  private readonly bv: Float32Array;
  private readonly outProj: WeightMatrix;
  private readonly outBias: Float32Array;
  private readonly normWeight: Float32Array;
  private readonly normBias: Float32Array;
  private readonly fc1: WeightMatrix;
  private readonly fc1Bias: Float32Array;
  private readonly fc2: WeightMatrix;
  private readonly fc2Bias: Float32Array;

  /** `prefix`: the head's tensors ('vision_model.head.'). */
  constructor(
    private readonly config: VisionTowerConfig,
    w: CheckpointWeights,
    prefix: string,
    private readonly ops: Ops,
  ) {
    const H = config.hiddenSize;
    this.probe = w.array(`${prefix}probe`, [1, 1, H]);
    [this.wq, this.wk, this.wv] = w.rowBlocks(`${prefix}attention.in_proj_weight`, H, [H, H, H]);
    const inBias = w.vector(`${prefix}attention.in_proj_bias`, 3 * H);
    [this.bq, this.bk, this.bv] = [0, 1, 2].map((i) => inBias.subarray(i * H, (i + 1) * H));
    this.outProj = w.matrix(`${prefix}attention.out_proj.weight`, H, H);
    this.outBias = w.vector(`${prefix}attention.out_proj.bias`, H);
    this.normWeight = w.vector(`${prefix}layernorm.weight`, H);
    this.normBias = w.vector(`${prefix}layernorm.bias`, H);
    this.fc1 = w.matrix(`${prefix}mlp.fc1.weight`, config.intermediateSize, H);
    this.fc1Bias = w.vector(`${prefix}mlp.fc1.bias`, config.intermediateSize);
    this.fc2 = w.matrix(`${prefix}mlp.fc2.weight`, H, config.intermediateSize);
    this.fc2Bias = w.vector(`${prefix}mlp.fc2.bias`, H);
  }

  /** The pooled embedding [hiddenSize] of `hidden` [tokens, hiddenSize] (the post-LayerNormed last hidden state). */
  pool(hidden: Float32Array, tokens: number): Float32Array {
    const { ops, config: c } = this;
    const H = c.hiddenSize;
    const headDim = H / c.numHeads;
    const q = new Float32Array(H);
    const k = new Float32Array(tokens * H);
    const v = new Float32Array(tokens * H);
    ops.matmul(this.probe, 1, this.wq, q, this.bq);
    ops.matmul(hidden, tokens, this.wk, k, this.bk);
    ops.matmul(hidden, tokens, this.wv, v, this.bv);
    ops.bidirectionalAttention(q, 1, k, v, tokens, c.numHeads, headDim, 1 / Math.sqrt(headDim), q);
    const x = new Float32Array(H);
    ops.matmul(q, 1, this.outProj, x, this.outBias);
    // x + mlp(layernorm(x))
    const normed = new Float32Array(H);
    ops.layerNorm(x, 1, H, this.normWeight, this.normBias, c.layerNormEps, normed);
    const mid = new Float32Array(c.intermediateSize);
    ops.matmul(normed, 1, this.fc1, mid, this.fc1Bias);
    ops.gelu(mid, mid, c.intermediateSize, c.hiddenAct);
    ops.matmul(mid, 1, this.fc2, normed, this.fc2Bias);
    ops.add(x, normed, x, H);
    return x;
  }
}
