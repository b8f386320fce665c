// Qwen2-VL's vision tower (transformers' Qwen2VisionTransformerPretrainedModel), written against Ops:
//   patch embedding (a Conv3d whose kernel is its stride, no bias: one matmul over the flattened patches)
//   → depth × [LayerNorm → attention (fused qkv, 2-D rotary on q and k, every patch of the image
//              sees every other) → residual → LayerNorm → fc1 → GELU → fc2 → residual]
//   → PatchMerger: LayerNorm, each merge window's merge² consecutive rows as one row, Linear → GELU (erf) → Linear.
// There are no learned positions: a patch's place is only in the rotary, whose first headDim / 4
// frequencies turn by the patch's row and the next headDim / 4 by its column (rot_pos_emb). The
// patch count varies with the image, so buffers are made per image.
import type { Ops, WeightMatrix } from '../../kernels/ops.js';
import type { CheckpointWeights } from '../architectures/weights.js';
import type { Qwen2VlVisionConfig } from './qwen2-vl-config.js';
import { layerNorm, linear, type LayerNorm, type Linear } from './vision-weights.js';

const LAYER_NORM_EPS = 1e-6;
const ROPE_THETA = 10000;

interface Block {
  readonly norm1: LayerNorm;
  readonly q: Linear;
  readonly k: Linear;
  readonly v: Linear;
  readonly proj: Linear;
  readonly norm2: LayerNorm;
  readonly fc1: Linear;
  readonly fc2: Linear;
}

/**
 * The rotary angles' cos and sin, [n, headDim / 2] each, of patches laid out as the processor
 * flattens them (merge window by merge window). Pair i < headDim / 4 turns at row · f_i, pair
 * headDim / 4 + i at column · f_i, f_i = θ^(−2i / (headDim / 2)): HF's VisionRotaryEmbedding(headDim / 2).
 * transformers makes the frequencies and angles in f32 (its inv_freq buffer, torch.outer), so do we.
 */
export function visionRotary(gridH: number, gridW: number, merge: number, headDim: number): { cos: Float32Array; sin: Float32Array } {
  const quarter = headDim / 4;
  const half = headDim / 2;
  const freq = Float32Array.from({ length: quarter }, (_, i) =>
    Math.fround(1 / Math.fround(Math.pow(ROPE_THETA, Math.fround(Math.fround(2 * i) / half)))),
  );
  const n = gridH * gridW;
  const cos = new Float32Array(n * half);
  const sin = new Float32Array(n * half);
  let r = 0;
  for (let bh = 0; bh < gridH / merge; bh++)
    for (let bw = 0; bw < gridW / merge; bw++)
      for (let mh = 0; mh < merge; mh++)
        for (let mw = 0; mw < merge; mw++, r++) {
          const pos = [bh * merge + mh, bw * merge + mw];
          for (let i = 0; i < half; i++) {
            const angle = Math.fround(pos[i < quarter ? 0 : 1] * freq[i % quarter]);
            cos[r * half + i] = Math.cos(angle);
            sin[r * half + i] = Math.sin(angle);
          }
        }
  return { cos, sin };
}

/** rotate_half rotary in place on x [n, numHeads, headDim]: pair (j, j + headDim / 2) by row's angle j. */
function applyRotary(x: Float32Array, n: number, numHeads: number, headDim: number, cos: Float32Array, sin: Float32Array): void {
  const half = headDim / 2;
  for (let t = 0; t < n; t++)
    for (let h = 0; h < numHeads; h++) {
      const base = (t * numHeads + h) * headDim;
      for (let j = 0; j < half; j++) {
        const c = cos[t * half + j];
        const s = sin[t * half + j];
        const a = x[base + j];
        const b = x[base + j + half];
        x[base + j] = a * c - b * s;
        x[base + j + half] = b * c + a * s;
      }
    }
}

export class Qwen2VisionTransformer {
  private readonly patchEmbed: WeightMatrix;
  private readonly blocks: Block[] = [];
  private readonly lnQ: LayerNorm;
  private readonly mergerFc1: Linear;
  private readonly mergerFc2: Linear;

  /** `prefix`: where the tower's tensors sit in the checkpoint ('visual.'). */
  constructor(
    readonly config: Qwen2VlVisionConfig,
    w: CheckpointWeights,
    prefix: string,
    private readonly ops: Ops,
  ) {
    const c = config;
    const E = c.embedDim;
    this.patchEmbed = w.flatMatrix(`${prefix}patch_embed.proj.weight`, [E, c.inChannels, c.temporalPatchSize, c.patchSize, c.patchSize]);
    for (let i = 0; i < c.depth; i++) {
      const p = `${prefix}blocks.${i}.`;
      // qkv's rows are q's, then k's, then v's (HF reshapes its output [n, 3, heads, headDim]).
      const [q, k, v] = w.rowBlocks(`${p}attn.qkv.weight`, E, [E, E, E]);
      const qkvBias = w.vector(`${p}attn.qkv.bias`, 3 * E);
      this.blocks.push({
        norm1: layerNorm(w, `${p}norm1`, E),
        q: { weight: q, bias: qkvBias.subarray(0, E) },
        k: { weight: k, bias: qkvBias.subarray(E, 2 * E) },
        v: { weight: v, bias: qkvBias.subarray(2 * E) },
        proj: linear(w, `${p}attn.proj`, E, E),
        norm2: layerNorm(w, `${p}norm2`, E),
        fc1: linear(w, `${p}mlp.fc1`, c.mlpDim, E),
        fc2: linear(w, `${p}mlp.fc2`, E, c.mlpDim),
      });
    }
    const merged = E * c.spatialMergeSize ** 2;
    this.lnQ = layerNorm(w, `${prefix}merger.ln_q`, E);
    this.mergerFc1 = linear(w, `${prefix}merger.mlp.0`, merged, merged);
    this.mergerFc2 = linear(w, `${prefix}merger.mlp.2`, c.outDim, merged);
  }

  /**
   * The image tokens of one image's flattened patches ([gridH · gridW, channels · tp · patch²], the
   * processor's order): a new [gridH · gridW / merge², outDim], merge window by merge window.
   */
  forward(patches: Float32Array, gridH: number, gridW: number): Float32Array {
    const c = this.config;
    const { ops } = this;
    const m = c.spatialMergeSize;
    if (gridH % m !== 0 || gridW % m !== 0)
      throw new RangeError(`Qwen2-VL tower: a ${gridH}×${gridW} patch grid is not whole merge windows`);
    const n = gridH * gridW;
    const E = c.embedDim;
    if (patches.length !== n * this.patchEmbed.cols) {
      throw new RangeError(`Qwen2-VL tower: ${patches.length} patch values, expected ${n}×${this.patchEmbed.cols}`);
    }
    const headDim = E / c.numHeads;
    const { cos, sin } = visionRotary(gridH, gridW, m, headDim);
    const hidden = new Float32Array(n * E);
    const normed = new Float32Array(n * E);
    const q = new Float32Array(n * E);
    const k = new Float32Array(n * E);
    const v = new Float32Array(n * E);
    const mlp = new Float32Array(n * c.mlpDim);
    ops.matmul(patches, n, this.patchEmbed, hidden);
    for (const B of this.blocks) {
      ops.layerNorm(hidden, n, E, B.norm1.weight, B.norm1.bias, LAYER_NORM_EPS, normed);
      ops.matmul(normed, n, B.q.weight, q, B.q.bias);
      ops.matmul(normed, n, B.k.weight, k, B.k.bias);
      ops.matmul(normed, n, B.v.weight, v, B.v.bias);
      applyRotary(q, n, c.numHeads, headDim, cos, sin);
      applyRotary(k, n, c.numHeads, headDim, cos, sin);
      ops.bidirectionalAttention(q, n, k, v, n, c.numHeads, headDim, 1 / Math.sqrt(headDim), q);
      ops.matmul(q, n, B.proj.weight, normed, B.proj.bias);
      ops.add(hidden, normed, hidden, n * E);
      ops.layerNorm(hidden, n, E, B.norm2.weight, B.norm2.bias, LAYER_NORM_EPS, normed);
      ops.matmul(normed, n, B.fc1.weight, mlp, B.fc1.bias);
      ops.gelu(mlp, mlp, n * c.mlpDim, c.hiddenAct);
      ops.matmul(mlp, n, B.fc2.weight, normed, B.fc2.bias);
      ops.add(hidden, normed, hidden, n * E);
    }
    // A merge window's rows are consecutive, so [n, E] read as [n / m², E · m²] groups them.
    const rows = n / (m * m);
    ops.layerNorm(hidden, n, E, this.lnQ.weight, this.lnQ.bias, LAYER_NORM_EPS, normed);
    const mid = new Float32Array(rows * this.mergerFc1.weight.rows);
    ops.matmul(normed, rows, this.mergerFc1.weight, mid, this.mergerFc1.bias);
    ops.gelu(mid, mid, mid.length, 'erf');
    const out = new Float32Array(rows * c.outDim);
    ops.matmul(mid, rows, this.mergerFc2.weight, out, this.mergerFc2.bias);
    return out;
  }
}
