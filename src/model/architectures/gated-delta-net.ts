// Qwen3.5's Gated DeltaNet linear-attention layer (transformers' Qwen3_5GatedDeltaNet, text path):
//   mixed = in_proj_qkv · x → causal depthwise conv1d (linear_conv_kernel_dim, no bias) → SiLU → q | k | v
//   z = in_proj_z · x, b = in_proj_b · x, a = in_proj_a · x (one per v head)
//   beta = sigmoid(b), g = −exp(A_log) · softplus(a + dt_bias)
//   o = gated delta rule (q, k l2-normalised; k heads shared by numValueHeads / numKeyHeads v heads)
//   out = out_proj · (RMSNorm(o per v head) · norm.weight · silu(z))
// The conv window and the delta-rule matrix carry over between steps in the sequence's state slot.
import type { Ops, RecurrentSeq, WeightMatrix } from '../../kernels/ops.js';
import type { LinearAttentionConfig, ModelConfig } from '../types.js';
import type { LinearLayerState } from './recurrent-state.js';
import type { CheckpointWeights } from './weights.js';

export interface GatedDeltaNetWeights {
  inProjQkv: WeightMatrix;
  inProjZ: WeightMatrix;
  inProjB: WeightMatrix;
  inProjA: WeightMatrix;
  /** conv1d.weight [channels, 1, kernel] transposed to [kernel, channels] (ops.causalConv1d). */
  convWeight: Float32Array;
  /** −exp(A_log), per v head. */
  negA: Float32Array;
  dtBias: Float32Array;
  /** The gated RMSNorm's weight [valueHeadDim] (plain, not 1 + w). */
  norm: Float32Array;
  outProj: WeightMatrix;
}

/** Widths of the layer's activations. */
export function gdnWidths(la: LinearAttentionConfig): { key: number; value: number; conv: number } {
  const key = la.numKeyHeads * la.keyHeadDim;
  const value = la.numValueHeads * la.valueHeadDim;
  return { key, value, conv: 2 * key + value };
}

export function loadGatedDeltaNet(w: CheckpointWeights, c: ModelConfig, la: LinearAttentionConfig, prefix: string): GatedDeltaNetWeights {
  const p = `${prefix}linear_attn.`;
  const { value, conv } = gdnWidths(la);
  const K = la.convKernel;
  const raw = w.array(`${p}conv1d.weight`, [conv, 1, K]);
  const convWeight = new Float32Array(K * conv);
  for (let ch = 0; ch < conv; ch++) for (let j = 0; j < K; j++) convWeight[j * conv + ch] = raw[ch * K + j];
  // transformers: -self.A_log.float().exp(), in f32.
  const negA = w.vector(`${p}A_log`, la.numValueHeads).map((v) => -Math.exp(v));
  return {
    inProjQkv: w.matrix(`${p}in_proj_qkv.weight`, conv, c.hiddenSize),
    inProjZ: w.matrix(`${p}in_proj_z.weight`, value, c.hiddenSize),
    inProjB: w.matrix(`${p}in_proj_b.weight`, la.numValueHeads, c.hiddenSize),
    inProjA: w.matrix(`${p}in_proj_a.weight`, la.numValueHeads, c.hiddenSize),
    convWeight,
    negA,
    dtBias: w.vector(`${p}dt_bias`, la.numValueHeads),
    norm: w.vector(`${p}norm.weight`, la.valueHeadDim),
    outProj: w.matrix(`${p}out_proj.weight`, c.hiddenSize, value),
  };
}

/** torch.nn.functional.softplus (beta 1, threshold 20): x above the threshold, else log(1 + eˣ). */
export function softplus(x: number): number {
  return x > 20 ? x : Math.log1p(Math.exp(x));
}

/**
 * In place over n rows of [heads]: b → beta = sigmoid(b), a → g = negA · softplus(a + dtBias), each
 * step rounded to f32 as transformers computes it.
 */
export function gdnGates(a: Float32Array, b: Float32Array, n: number, negA: Float32Array, dtBias: Float32Array): void {
  const heads = negA.length;
  for (let i = 0; i < n * heads; i++) {
    const h = i % heads;
    b[i] = 1 / (1 + Math.exp(-b[i]));
    a[i] = negA[h] * Math.fround(softplus(Math.fround(a[i] + dtBias[h])));
  }
}

/** Activation buffers of a Gated DeltaNet layer, grown to the largest batch seen. */
export class GdnScratch {
  private capacity = 0;
  mixed = new Float32Array(0);
  conv = new Float32Array(0);
  q = new Float32Array(0);
  k = new Float32Array(0);
  v = new Float32Array(0);
  z = new Float32Array(0);
  a = new Float32Array(0);
  b = new Float32Array(0);
  core = new Float32Array(0);

  constructor(private readonly la: LinearAttentionConfig) {}

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const { key, value, conv } = gdnWidths(this.la);
    this.mixed = new Float32Array(cap * conv);
    this.conv = new Float32Array(cap * conv);
    this.q = new Float32Array(cap * key);
    this.k = new Float32Array(cap * key);
    this.v = new Float32Array(cap * value);
    this.z = new Float32Array(cap * value);
    this.a = new Float32Array(cap * this.la.numValueHeads);
    this.b = new Float32Array(cap * this.la.numValueHeads);
    this.core = new Float32Array(cap * value);
    this.capacity = cap;
  }
}

/**
 * The layer over n rows of `x` (the input-normed hidden states) into out [n, hidden], each sequence
 * continuing from its slot of `state` (which it leaves holding the state after its last row).
 */
export function runGatedDeltaNet(
  ops: Ops,
  c: ModelConfig,
  la: LinearAttentionConfig,
  w: GatedDeltaNetWeights,
  s: GdnScratch,
  x: Float32Array,
  n: number,
  seqs: readonly RecurrentSeq[],
  state: LinearLayerState,
  out: Float32Array,
): void {
  const { key, value, conv } = gdnWidths(la);
  s.ensure(n);
  ops.matmul(x, n, w.inProjQkv, s.mixed);
  ops.matmul(x, n, w.inProjZ, s.z);
  ops.matmul(x, n, w.inProjB, s.b);
  ops.matmul(x, n, w.inProjA, s.a);
  ops.causalConv1d(s.mixed, conv, la.convKernel, w.convWeight, seqs, state.conv, s.conv);
  for (let i = 0; i < n; i++) {
    const row = i * conv;
    s.q.set(s.conv.subarray(row, row + key), i * key);
    s.k.set(s.conv.subarray(row + key, row + 2 * key), i * key);
    s.v.set(s.conv.subarray(row + 2 * key, row + conv), i * value);
  }
  gdnGates(s.a, s.b, n, w.negA, w.dtBias);
  const params = { numKHeads: la.numKeyHeads, numVHeads: la.numValueHeads, kDim: la.keyHeadDim, vDim: la.valueHeadDim, l2norm: true };
  ops.gatedDeltaRule(s.q, s.k, s.v, s.a, s.b, seqs, params, state.delta, s.core);
  // Gated RMSNorm per v head: norm(o) · weight · silu(z).
  ops.rmsnorm(s.core, n * la.numValueHeads, la.valueHeadDim, w.norm, c.rmsNormEps, s.core);
  ops.siluMul(s.z, s.core, s.core, n * value);
  ops.matmul(s.core, n, w.outProj, out);
}
