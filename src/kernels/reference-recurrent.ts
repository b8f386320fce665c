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

/** Tokens per chunk of the chunked gated delta rule and chunked SSD (transformers' and fla's chunk_size). */
export const RECURRENCE_CHUNK = 64;

/**
 * The gated delta rule in its chunked form (transformers' torch_chunk_gated_delta_rule, fla's chunk
 * kernels): same inputs, outputs and state as gatedDeltaRule, computed per block of `chunk` tokens of a
 * sequence (the last block may be shorter). With γ the cumulative log decay inside the block, S₀ the
 * state entering it, k̂ / q̂ the (normalised, q scaled) keys and queries:
 *   the deltas u_t = β_t (v_t − e^{γ_t} S₀ᵀk̂_t) − β_t Σ_{j<t} e^{γ_t−γ_j} (k̂_t·k̂_j) u_j
 *     (the UT transform: one lower-triangular solve, here by forward substitution on the rows of u);
 *   out_t = e^{γ_t} S₀ᵀq̂_t + Σ_{j≤t} e^{γ_t−γ_j} (q̂_t·k̂_j) u_j;
 *   S = e^{γ_last} S₀ + Σ_j e^{γ_last−γ_j} k̂_j u_jᵀ.
 * It is the recurrence regrouped (equal in exact arithmetic); everything is f64 within the call, as in
 * gatedDeltaRule. native/gated_delta.cc runs the same steps as small f32 GEMMs.
 */
export function gatedDeltaRuleChunked(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: GatedDeltaParams,
  state: Float32Array,
  out: Float32Array,
  chunk = RECURRENCE_CHUNK,
): void {
  const { numKHeads, numVHeads, kDim: K, vDim: V, l2norm } = params;
  if (numVHeads % numKHeads !== 0) throw new RangeError(`gatedDeltaRule: ${numVHeads} v heads are not a multiple of ${numKHeads} k heads`);
  if (!(Number.isInteger(chunk) && chunk >= 1)) throw new RangeError(`gatedDeltaRule: chunk ${chunk} must be a positive integer`);
  const group = numVHeads / numKHeads;
  const headState = K * V;
  checkSeqs('gatedDeltaRule', seqs, Math.floor(g.length / numVHeads), Math.floor(state.length / (numVHeads * headState)));
  const scale = 1 / Math.sqrt(K);
  const S = new Float64Array(headState);
  const qn = new Float64Array(chunk * K);
  const kn = new Float64Array(chunk * K);
  const u = new Float64Array(chunk * V);
  const gam = new Float64Array(chunk);
  const b = new Float64Array(chunk);
  const normed = (x: Float32Array, off: number, to: Float64Array, at: number, mul: number): void => {
    let ss = 0;
    for (let d = 0; d < K; d++) ss += x[off + d] * x[off + d];
    const inv = (l2norm ? 1 / Math.sqrt(ss + 1e-6) : 1) * mul;
    for (let d = 0; d < K; d++) to[at + d] = x[off + d] * inv;
  };
  for (const { qStart, qLen, slot } of seqs) {
    for (let h = 0; h < numVHeads; h++) {
      const sBase = (slot * numVHeads + h) * headState;
      for (let i = 0; i < headState; i++) S[i] = state[sBase + i];
      const kh = Math.floor(h / group);
      for (let t0 = qStart; t0 < qStart + qLen; t0 += chunk) {
        const c = Math.min(chunk, qStart + qLen - t0);
        let acc = 0;
        for (let t = 0; t < c; t++) {
          const row = t0 + t;
          normed(q, (row * numKHeads + kh) * K, qn, t * K, scale);
          normed(k, (row * numKHeads + kh) * K, kn, t * K, 1);
          acc += g[row * numVHeads + h];
          gam[t] = acc;
          b[t] = beta[row * numVHeads + h];
        }
        const dot = (a: Float64Array, i: number, j: number): number => {
          let s = 0;
          for (let d = 0; d < K; d++) s += a[i * K + d] * kn[j * K + d];
          return s;
        };
        // u_t: the right-hand side, then the forward substitution over earlier rows.
        for (let t = 0; t < c; t++) {
          const vOff = ((t0 + t) * numVHeads + h) * V;
          const eg = Math.exp(gam[t]);
          for (let e = 0; e < V; e++) {
            let sk = 0;
            for (let d = 0; d < K; d++) sk += S[d * V + e] * kn[t * K + d];
            u[t * V + e] = b[t] * (v[vOff + e] - eg * sk);
          }
          for (let j = 0; j < t; j++) {
            const a = -b[t] * dot(kn, t, j) * Math.exp(gam[t] - gam[j]);
            for (let e = 0; e < V; e++) u[t * V + e] += a * u[j * V + e];
          }
        }
        // Outputs from the entering state and the block's own deltas.
        for (let t = 0; t < c; t++) {
          const oOff = ((t0 + t) * numVHeads + h) * V;
          const eg = Math.exp(gam[t]);
          const p = new Float64Array(t + 1);
          for (let j = 0; j <= t; j++) p[j] = dot(qn, t, j) * Math.exp(gam[t] - gam[j]);
          for (let e = 0; e < V; e++) {
            let sq = 0;
            for (let d = 0; d < K; d++) sq += S[d * V + e] * qn[t * K + d];
            let o = eg * sq;
            for (let j = 0; j <= t; j++) o += p[j] * u[j * V + e];
            out[oOff + e] = o;
          }
        }
        // The state leaving the block.
        const last = gam[c - 1];
        const eLast = Math.exp(last);
        for (let d = 0; d < K; d++)
          for (let e = 0; e < V; e++) {
            let s = eLast * S[d * V + e];
            for (let j = 0; j < c; j++) s += Math.exp(last - gam[j]) * kn[j * K + d] * u[j * V + e];
            S[d * V + e] = s;
          }
      }
      for (let i = 0; i < headState; i++) state[sBase + i] = S[i];
    }
  }
}
