// Plain-TypeScript recurrent ops of linear-attention layers (Qwen3.5 / Qwen3-Next GatedDeltaNet): the
// causal depthwise conv1d with a carried state and the gated delta rule in its recurrent form, as
// transformers' causal_conv1d_update and torch_recurrent_gated_delta_rule compute them. Sums and the
// state within one call are f64; inputs, outputs and the stored state are f32.
import type { GatedDeltaParams, RecurrentSeq } from './ops.js';

function checkSeqs(op: string, seqs: readonly RecurrentSeq[], rows: number, numSlots: number): void {
  for (const { qStart, qLen, slot } of seqs) {
    if (!(qStart >= 0 && qLen >= 0 && qStart + qLen <= rows))
      throw new RangeError(`${op}: rows [${qStart}, ${qStart + qLen}) outside ${rows}`);
    if (!(Number.isInteger(slot) && slot >= 0 && slot < numSlots)) throw new RangeError(`${op}: state slot ${slot} outside ${numSlots}`);
  }
}

/** x · rsqrt(Σx² + eps) over each of `rows` rows of `dim` (transformers' l2norm, eps 1e-6), into out (may alias x). */
export function l2normalize(x: Float32Array, rows: number, dim: number, out: Float32Array, eps = 1e-6): void {
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let d = 0; d < dim; d++) ss += x[r * dim + d] * x[r * dim + d];
    const inv = 1 / Math.sqrt(ss + eps);
    for (let d = 0; d < dim; d++) out[r * dim + d] = x[r * dim + d] * inv;
  }
}

export function causalConv1d(
  x: Float32Array,
  channels: number,
  kernel: number,
  weight: Float32Array,
  seqs: readonly RecurrentSeq[],
  state: Float32Array,
  out: Float32Array,
  bias?: Float32Array,
): void {
  const ctx = kernel - 1;
  const slotSize = ctx * channels;
  const rows = Math.floor(x.length / channels);
  checkSeqs('causalConv1d', seqs, rows, slotSize === 0 ? Infinity : Math.floor(state.length / slotSize));
  for (const { qStart, qLen, slot } of seqs) {
    const base = slot * slotSize;
    // Input at relative time t (t < 0: the carried context).
    const input = (t: number, c: number): number => (t < 0 ? state[base + (ctx + t) * channels + c] : x[(qStart + t) * channels + c]);
    for (let t = 0; t < qLen; t++) {
      for (let c = 0; c < channels; c++) {
        let s = bias ? bias[c] : 0;
        for (let j = 0; j < kernel; j++) s += weight[j * channels + c] * input(t - ctx + j, c);
        out[(qStart + t) * channels + c] = s / (1 + Math.exp(-s));
      }
    }
    // The new context: the last ctx inputs of [old context, x rows].
    const next = new Float32Array(slotSize);
    for (let j = 0; j < ctx; j++) for (let c = 0; c < channels; c++) next[j * channels + c] = input(qLen - ctx + j, c);
    state.set(next, base);
  }
}

export function gatedDeltaRule(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: GatedDeltaParams,
  state: Float32Array,
  out: Float32Array,
): void {
  const { numKHeads, numVHeads, kDim, vDim, l2norm } = params;
  if (numVHeads % numKHeads !== 0) throw new RangeError(`gatedDeltaRule: ${numVHeads} v heads are not a multiple of ${numKHeads} k heads`);
  const group = numVHeads / numKHeads;
  const headState = kDim * vDim;
  checkSeqs('gatedDeltaRule', seqs, Math.floor(g.length / numVHeads), Math.floor(state.length / (numVHeads * headState)));
  const scale = 1 / Math.sqrt(kDim);
  const S = new Float64Array(headState);
  const qt = new Float64Array(kDim);
  const kt = new Float64Array(kDim);
  const delta = new Float64Array(vDim);
  for (const { qStart, qLen, slot } of seqs) {
    for (let h = 0; h < numVHeads; h++) {
      const sBase = (slot * numVHeads + h) * headState;
      for (let i = 0; i < headState; i++) S[i] = state[sBase + i];
      const kh = Math.floor(h / group);
      for (let t = qStart; t < qStart + qLen; t++) {
        const qkOff = (t * numKHeads + kh) * kDim;
        let qss = 0,
          kss = 0;
        for (let d = 0; d < kDim; d++) {
          qss += q[qkOff + d] * q[qkOff + d];
          kss += k[qkOff + d] * k[qkOff + d];
        }
        const qInv = l2norm ? 1 / Math.sqrt(qss + 1e-6) : 1;
        const kInv = l2norm ? 1 / Math.sqrt(kss + 1e-6) : 1;
        for (let d = 0; d < kDim; d++) {
          qt[d] = q[qkOff + d] * qInv * scale;
          kt[d] = k[qkOff + d] * kInv;
        }
        const decay = Math.exp(g[t * numVHeads + h]);
        const b = beta[t * numVHeads + h];
        const vOff = (t * numVHeads + h) * vDim;
        for (let e = 0; e < vDim; e++) {
          let mem = 0;
          for (let d = 0; d < kDim; d++) mem += S[d * vDim + e] * decay * kt[d];
          delta[e] = (v[vOff + e] - mem) * b;
        }
        for (let e = 0; e < vDim; e++) {
          let o = 0;
          for (let d = 0; d < kDim; d++) {
            const s = S[d * vDim + e] * decay + kt[d] * delta[e];
            S[d * vDim + e] = s;
            o += s * qt[d];
          }
          out[vOff + e] = o;
        }
      }
      for (let i = 0; i < headState; i++) state[sBase + i] = S[i];
    }
  }
}
