// The ViT vision tower of SigLIP and CLIP (transformers' SiglipVisionTransformer /
// CLIPVisionTransformer), written against Ops:
//   patch embedding (a stride-patch convolution, done as one matmul over the unfolded patches)
//   [+ CLIP's class row] + learned position embeddings [→ CLIP's pre-LayerNorm]
//   → N × [LayerNorm → multi-head attention (bidirectional, biased) → residual
//          → LayerNorm → fc1 → GELU → fc2 → residual]
//   → post-LayerNorm (last_hidden_state only).
// Hidden states are numbered as transformers' hidden_states: 0 is the embeddings' output (after
// CLIP's pre-LayerNorm), l the output of layer l; none of them has the post-LayerNorm applied.
// Buffers for one image are made once, here: an image always has the same number of patches.
import type { Ops, WeightMatrix } from '../../kernels/ops.js';
import type { CheckpointWeights } from '../architectures/weights.js';
import type { VisionTowerConfig } from './vision-config.js';
import { layerNorm, linear, type LayerNorm, type Linear } from './vision-weights.js';

interface EncoderLayer {
  readonly norm1: LayerNorm;
  readonly q: Linear;
  readonly k: Linear;
  readonly v: Linear;
  readonly out: Linear;
  readonly norm2: LayerNorm;
  readonly fc1: Linear;
  readonly fc2: Linear;
}

export class VisionTransformer {
  /** Rows of every hidden state: one per patch, plus CLIP's class row first. */
  readonly numTokens: number;
  readonly numPatches: number;
  private readonly patchEmbedding: WeightMatrix;
  private readonly patchBias: Float32Array | undefined;
  private readonly classEmbedding: Float32Array | undefined;
  private readonly positions: Float32Array;
  private readonly preNorm: LayerNorm | undefined;
  private readonly layers: EncoderLayer[] = [];
  private readonly postNorm: LayerNorm | undefined;
  // Scratch for one image.
  private readonly patches: Float32Array;
  private readonly hidden: Float32Array;
  private readonly normed: Float32Array;
  private readonly q: Float32Array;
  private readonly k: Float32Array;
  private readonly v: Float32Array;
  private readonly mlp: Float32Array;

  /** `prefix`: where the tower's tensors sit in the checkpoint ('vision_tower.', 'vision_model.'). */
  constructor(
    readonly config: VisionTowerConfig,
    w: CheckpointWeights,
    prefix: string,
    private readonly ops: Ops,
  ) {
    const c = config;
    const H = c.hiddenSize;
    // A valid (unpadded) convolution: pixels past the last whole patch are not read.
    const grid = Math.floor(c.imageSize / c.patchSize);
    this.numPatches = grid * grid;
    const clip = c.family === 'clip';
    this.numTokens = this.numPatches + (clip ? 1 : 0);
    const e = `${prefix}embeddings.`;
    this.patchEmbedding = w.flatMatrix(`${e}patch_embedding.weight`, [H, c.numChannels, c.patchSize, c.patchSize]);
    // CLIP's convolution has no bias; SigLIP's has.
    this.patchBias = clip ? undefined : w.vector(`${e}patch_embedding.bias`, H);
    this.classEmbedding = clip ? w.vector(`${e}class_embedding`, H) : undefined;
    this.positions = w.array(`${e}position_embedding.weight`, [this.numTokens, H]);
    this.preNorm = clip ? layerNorm(w, `${prefix}pre_layrnorm`, H) : undefined;
    for (let i = 0; i < c.numLayers; i++) {
      const p = `${prefix}encoder.layers.${i}.`;
      this.layers.push({
        norm1: layerNorm(w, `${p}layer_norm1`, H),
        q: linear(w, `${p}self_attn.q_proj`, H, H),
        k: linear(w, `${p}self_attn.k_proj`, H, H),
        v: linear(w, `${p}self_attn.v_proj`, H, H),
        out: linear(w, `${p}self_attn.out_proj`, H, H),
        norm2: layerNorm(w, `${p}layer_norm2`, H),
        fc1: linear(w, `${p}mlp.fc1`, c.intermediateSize, H),
        fc2: linear(w, `${p}mlp.fc2`, H, c.intermediateSize),
      });
    }
    // LLaVA reads hidden states before it, and some checkpoints leave it out.
    this.postNorm = w.has(`${prefix}post_layernorm.weight`) ? layerNorm(w, `${prefix}post_layernorm`, H) : undefined;
    const T = this.numTokens;
    this.patches = new Float32Array(this.numPatches * this.patchEmbedding.cols);
    this.hidden = new Float32Array(T * H);
    this.normed = new Float32Array(T * H);
    this.q = new Float32Array(T * H);
    this.k = new Float32Array(T * H);
    this.v = new Float32Array(T * H);
    this.mlp = new Float32Array(T * c.intermediateSize);
  }

  /**
   * Hidden states `indices` (0 … numLayers, transformers' numbering) of the image `pixels`
   * ([channels, imageSize, imageSize], normalised), concatenated per row into a new array
   * [numTokens, indices.length · hiddenSize] in the order given. Layers past the deepest index asked
   * for are not run.
   */
  hiddenStates(pixels: Float32Array, indices: readonly number[]): Float32Array {
    const H = this.config.hiddenSize;
    const T = this.numTokens;
    const width = indices.length * H;
    const out = new Float32Array(T * width);
    for (const i of indices) {
      if (!Number.isInteger(i) || i < 0 || i > this.layers.length)
        throw new RangeError(`hidden state ${i} outside 0 … ${this.layers.length}`);
    }
    this.run(pixels, Math.max(...indices), (index, hidden) => {
      indices.forEach((want, slot) => {
        if (want !== index) return;
        for (let t = 0; t < T; t++) out.set(hidden.subarray(t * H, (t + 1) * H), t * width + slot * H);
      });
    });
    return out;
  }

  /** transformers' last_hidden_state: the last layer's output through the post-LayerNorm, [numTokens, hiddenSize]. */
  lastHiddenState(pixels: Float32Array): Float32Array {
    if (!this.postNorm) throw new Error('vision tower: the checkpoint has no post_layernorm');
    const c = this.config;
    this.run(pixels, this.layers.length);
    const out = new Float32Array(this.numTokens * c.hiddenSize);
    this.ops.layerNorm(this.hidden, this.numTokens, c.hiddenSize, this.postNorm.weight, this.postNorm.bias, c.layerNormEps, out);
    return out;
  }

  /** Embeddings, then layers 1 … upTo, reporting each hidden state (a view of scratch) as it is made. */
  private run(pixels: Float32Array, upTo: number, onState?: (index: number, hidden: Float32Array) => void): void {
    this.embed(pixels);
    onState?.(0, this.hidden);
    for (let l = 0; l < upTo; l++) {
      this.layer(this.layers[l]);
      onState?.(l + 1, this.hidden);
    }
  }

  private embed(pixels: Float32Array): void {
    const c = this.config;
    const { ops, hidden } = this;
    const H = c.hiddenSize;
    const P = c.patchSize;
    const S = c.imageSize;
    const grid = Math.floor(S / P);
    if (pixels.length !== c.numChannels * S * S) {
      throw new RangeError(`vision tower: ${pixels.length} pixel values, expected ${c.numChannels}×${S}×${S}`);
    }
    // Unfold: patch (py, px) becomes row py·grid + px, laid out [channel][ky][kx] as the kernel's columns.
    const cols = this.patchEmbedding.cols;
    for (let py = 0; py < grid; py++)
      for (let px = 0; px < grid; px++) {
        let o = (py * grid + px) * cols;
        for (let ch = 0; ch < c.numChannels; ch++)
          for (let ky = 0; ky < P; ky++) {
            const src = (ch * S + py * P + ky) * S + px * P;
            this.patches.set(pixels.subarray(src, src + P), o);
            o += P;
          }
      }
    // CLIP's class row goes first, the patches after it.
    const first = this.classEmbedding ? 1 : 0;
    if (this.classEmbedding) hidden.set(this.classEmbedding, 0);
    ops.matmul(this.patches, this.numPatches, this.patchEmbedding, hidden.subarray(first * H), this.patchBias);
    ops.add(hidden, this.positions, hidden, this.numTokens * H);
    if (this.preNorm) ops.layerNorm(hidden, this.numTokens, H, this.preNorm.weight, this.preNorm.bias, c.layerNormEps, hidden);
  }

  private layer(L: EncoderLayer): void {
    const c = this.config;
    const { ops, hidden, normed, q, k, v, mlp } = this;
    const T = this.numTokens;
    const H = c.hiddenSize;
    const headDim = H / c.numHeads;
    ops.layerNorm(hidden, T, H, L.norm1.weight, L.norm1.bias, c.layerNormEps, normed);
    ops.matmul(normed, T, L.q.weight, q, L.q.bias);
    ops.matmul(normed, T, L.k.weight, k, L.k.bias);
    ops.matmul(normed, T, L.v.weight, v, L.v.bias);
    ops.bidirectionalAttention(q, T, k, v, T, c.numHeads, headDim, 1 / Math.sqrt(headDim), q);
    ops.matmul(q, T, L.out.weight, normed, L.out.bias);
    ops.add(hidden, normed, hidden, T * H);
    ops.layerNorm(hidden, T, H, L.norm2.weight, L.norm2.bias, c.layerNormEps, normed);
    ops.matmul(normed, T, L.fc1.weight, mlp, L.fc1.bias);
    ops.gelu(mlp, mlp, T * c.intermediateSize, c.hiddenAct);
    ops.matmul(mlp, T, L.fc2.weight, normed, L.fc2.bias);
    ops.add(hidden, normed, hidden, T * H);
  }
}
