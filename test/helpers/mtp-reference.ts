// A plain TypeScript forward of the multi-token-prediction layer, written from the design and not
// from src/model/architectures/mtp.ts: dense causal attention over plain arrays (no paged KV, no
// Ops), sums in f64, weights decoded from the checkpoint's tensors. Qwen3 layer shapes (q/k
// norms, no biases). Row i sits at position i: the MTP tests compare the engine's paged, native
// MTP path against it.
import { dequantize } from '../../src/kernels/dtypes.js';
import type { Checkpoint, ModelConfig } from '../../src/model/types.js';

/** One row in: the hidden state at its position and the token that follows that position. */
export interface MtpReferenceRow {
  hidden: Float32Array;
  token: number;
}

export interface MtpReferenceOutput {
  /** Per row: the layer's output hidden state (before shared_head.norm). */
  hidden: Float32Array[];
  /** Per row: logits over the whole vocabulary. */
  logits: Float32Array[];
}

type Matrix = { rows: number; cols: number; w: Float32Array };

export class ReferenceMtp {
  readonly config: ModelConfig;
  private readonly t: (name: string) => Float32Array;
  private readonly m: (name: string) => Matrix;
  private readonly p: string;

  constructor(private readonly checkpoint: Checkpoint) {
    const c = checkpoint.config;
    this.config = c;
    this.p = `model.layers.${c.numLayers}.`;
    this.t = (name) => {
      const tensor = checkpoint.tensors.get(name);
      if (!tensor) throw new Error(`reference MTP: no tensor ${name}`);
      const cols = tensor.shape[tensor.shape.length - 1];
      return dequantize(tensor.dtype, tensor.data, tensor.shape.length === 1 ? 1 : tensor.shape[0], cols);
    };
    this.m = (name) => {
      const tensor = checkpoint.tensors.get(name)!;
      return { rows: tensor.shape[0], cols: tensor.shape[1], w: this.t(name) };
    };
    if (checkpoint.tensors.has(`${this.p}self_attn.q_proj.bias`)) throw new Error('reference MTP: biases are not modelled');
  }

  /** Runs rows 0..n-1 (row i at position i); token ids of the whole vocabulary are scored. */
  run(rows: readonly MtpReferenceRow[]): MtpReferenceOutput {
    const c = this.config;
    const H = c.hiddenSize;
    const hd = c.headDim;
    const p = this.p;
    const eps = c.rmsNormEps;
    const embed = this.m('model.embed_tokens.weight');
    const enorm = this.t(`${p}enorm.weight`);
    const hnorm = this.t(`${p}hnorm.weight`);
    const eh = this.m(`${p}eh_proj.weight`);
    const inNorm = this.t(`${p}input_layernorm.weight`);
    const wq = this.m(`${p}self_attn.q_proj.weight`);
    const wk = this.m(`${p}self_attn.k_proj.weight`);
    const wv = this.m(`${p}self_attn.v_proj.weight`);
    const wo = this.m(`${p}self_attn.o_proj.weight`);
    const qNorm = this.t(`${p}self_attn.q_norm.weight`);
    const kNorm = this.t(`${p}self_attn.k_norm.weight`);
    const postNorm = this.t(`${p}post_attention_layernorm.weight`);
    const wg = this.m(`${p}mlp.gate_proj.weight`);
    const wu = this.m(`${p}mlp.up_proj.weight`);
    const wd = this.m(`${p}mlp.down_proj.weight`);
    const headNorm = this.t(`${p}shared_head.norm.weight`);
    const headName = `${p}shared_head.head.weight`;
    const head = this.hasTensor(headName) ? this.m(headName) : this.m('lm_head.weight');

    const keys: Float64Array[] = [];
    const values: Float64Array[] = [];
    const out: MtpReferenceOutput = { hidden: [], logits: [] };
    for (let i = 0; i < rows.length; i++) {
      // eh_proj input: [enorm(embedding) (zero at position 0) ; hnorm(hidden)].
      const e =
        i === 0
          ? new Float64Array(H)
          : rmsnorm(Float64Array.from(embed.w.subarray(rows[i].token * H, (rows[i].token + 1) * H)), enorm, eps);
      const h = rmsnorm(Float64Array.from(rows[i].hidden), hnorm, eps);
      const joined = new Float64Array(2 * H);
      joined.set(e, 0);
      joined.set(h, H);
      const x = matvec(eh, joined);
      // Attention.
      const a = rmsnorm(x, inNorm, eps);
      const q = matvec(wq, a);
      const k = matvec(wk, a);
      const v = matvec(wv, a);
      for (let head = 0; head < c.numHeads; head++) q.set(rmsnorm(q.subarray(head * hd, (head + 1) * hd), qNorm, eps), head * hd);
      for (let head = 0; head < c.numKvHeads; head++) k.set(rmsnorm(k.subarray(head * hd, (head + 1) * hd), kNorm, eps), head * hd);
      rope(q, c.numHeads, hd, i, c.ropeTheta);
      rope(k, c.numKvHeads, hd, i, c.ropeTheta);
      keys.push(k);
      values.push(v);
      const attn = new Float64Array(c.numHeads * hd);
      const group = c.numHeads / c.numKvHeads;
      for (let head = 0; head < c.numHeads; head++) {
        const kvh = Math.floor(head / group);
        const scores = new Float64Array(i + 1);
        let max = -Infinity;
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let d = 0; d < hd; d++) s += q[head * hd + d] * keys[j][kvh * hd + d];
          scores[j] = s / Math.sqrt(hd);
          max = Math.max(max, scores[j]);
        }
        let sum = 0;
        for (let j = 0; j <= i; j++) sum += scores[j] = Math.exp(scores[j] - max);
        for (let j = 0; j <= i; j++) for (let d = 0; d < hd; d++) attn[head * hd + d] += (scores[j] / sum) * values[j][kvh * hd + d];
      }
      const o = matvec(wo, attn);
      for (let d = 0; d < H; d++) x[d] += o[d];
      // SwiGLU MLP.
      const mIn = rmsnorm(x, postNorm, eps);
      const g = matvec(wg, mIn);
      const u = matvec(wu, mIn);
      for (let j = 0; j < g.length; j++) g[j] = (g[j] / (1 + Math.exp(-g[j]))) * u[j];
      const down = matvec(wd, g);
      for (let d = 0; d < H; d++) x[d] += down[d];
      out.hidden.push(Float32Array.from(x));
      out.logits.push(Float32Array.from(matvec(head, rmsnorm(x, headNorm, eps))));
    }
    return out;
  }

  private hasTensor(name: string): boolean {
    return this.checkpoint.tensors.has(name);
  }
}

function rmsnorm(x: Float64Array, weight: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, d) => v * inv * weight[d]);
}

function matvec(m: Matrix, x: Float64Array): Float64Array {
  const y = new Float64Array(m.rows);
  for (let r = 0; r < m.rows; r++) {
    let s = 0;
    for (let c = 0; c < m.cols; c++) s += m.w[r * m.cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

/** neox RoPE (rotate halves) of every head of x at `pos`. */
function rope(x: Float64Array, heads: number, hd: number, pos: number, theta: number): void {
  const half = hd / 2;
  for (let h = 0; h < heads; h++) {
    for (let k = 0; k < half; k++) {
      const angle = pos * Math.pow(theta, (-2 * k) / hd);
      const cos = Math.cos(angle);
      const sin = Math.sin(angle);
      const a = x[h * hd + k];
      const b = x[h * hd + k + half];
      x[h * hd + k] = a * cos - b * sin;
      x[h * hd + k + half] = a * sin + b * cos;
    }
  }
}
