// Plain-TypeScript Mamba2 selective state-space scan (SSD) in its recurrent form, as transformers'
// Mamba2Mixer / NemotronHMamba2Mixer torch_forward computes a cached step (its chunked prefill is the
// same recurrence, regrouped). Sums and the state within one call are f64; inputs, outputs and the
// stored state are f32.
import type { RecurrentSeq, SsdParams } from './ops.js';
import { RECURRENCE_CHUNK } from './reference-recurrent.js';

/** torch.nn.functional.softplus (beta 1, threshold 20). */
function softplus(x: number): number {
  return x > 20 ? x : Math.log1p(Math.exp(x));
}

/** Checks the head layout of an ssdScan call; returns the heads per B / C group. */
export function ssdHeadsPerGroup(op: string, p: SsdParams): number {
  for (const [name, v] of [
    ['numHeads', p.numHeads],
    ['headDim', p.headDim],
    ['stateSize', p.stateSize],
    ['nGroups', p.nGroups],
  ] as const)
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${op}: ${name} must be a positive integer, got ${v}`);
  if (p.numHeads % p.nGroups !== 0) throw new RangeError(`${op}: ${p.numHeads} heads are not a multiple of ${p.nGroups} groups`);
  for (const [name, a] of [
    ['a', p.a],
    ['d', p.d],
    ['dtBias', p.dtBias],
  ] as const)
    if (a.length < p.numHeads) throw new RangeError(`${op}: ${name} has ${a.length} values for ${p.numHeads} heads`);
  if (!(p.dtMin <= p.dtMax)) throw new RangeError(`${op}: dtMin ${p.dtMin} above dtMax ${p.dtMax}`);
  return p.numHeads / p.nGroups;
}

export function ssdScan(
  x: Float32Array,
  dt: Float32Array,
  b: Float32Array,
  c: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: SsdParams,
  state: Float32Array,
  out: Float32Array,
): void {
  const { numHeads: H, headDim: P, stateSize: N, nGroups: G } = params;
  const perGroup = ssdHeadsPerGroup('ssdScan', params);
  const rows = Math.floor(dt.length / H);
  const headState = P * N;
  const numSlots = Math.floor(state.length / (H * headState));
  for (const { qStart, qLen, slot } of seqs) {
    if (!(qStart >= 0 && qLen >= 0 && qStart + qLen <= rows))
      throw new RangeError(`ssdScan: rows [${qStart}, ${qStart + qLen}) outside ${rows}`);
    if (!(Number.isInteger(slot) && slot >= 0 && slot < numSlots)) throw new RangeError(`ssdScan: state slot ${slot} outside ${numSlots}`);
  }
  const S = new Float64Array(headState);
  for (const { qStart, qLen, slot } of seqs) {
    for (let h = 0; h < H; h++) {
      const sBase = (slot * H + h) * headState;
      for (let i = 0; i < headState; i++) S[i] = state[sBase + i];
      const g = Math.floor(h / perGroup);
      const a = params.a[h];
      const d = params.d[h];
      for (let t = qStart; t < qStart + qLen; t++) {
        const step = Math.min(Math.max(softplus(dt[t * H + h] + params.dtBias[h]), params.dtMin), params.dtMax);
        const decay = Math.exp(step * a);
        const bcOff = (t * G + g) * N;
        const xOff = (t * H + h) * P;
        for (let p = 0; p < P; p++) {
          const xv = x[xOff + p];
          const dtx = step * xv;
          let y = 0;
          for (let n = 0; n < N; n++) {
            const s = S[p * N + n] * decay + dtx * b[bcOff + n];
            S[p * N + n] = s;
            y += s * c[bcOff + n];
          }
          out[xOff + p] = y + d * xv;
        }
      }
      for (let i = 0; i < headState; i++) state[sBase + i] = S[i];
    }
  }
}

/**
 * Mamba2's SSD in its chunked form (the state-space duality: transformers' Mamba2Mixer torch_forward
 * without a cache, mamba_ssm's ssd_chunk_scan): same inputs, outputs and state as ssdScan, computed per
 * block of `chunk` tokens of a sequence (the last block may be shorter). With γ the cumulative log decay
 * dt·A inside the block (the segment sums γ_t − γ_j) and S₀ the state entering it:
 *   y_t = e^{γ_t} S₀ C_t + Σ_{j≤t} e^{γ_t−γ_j} (C_t·B_j) dt_j x_j + D x_t   (intra-block: a masked matmul);
 *   S = e^{γ_last} S₀ + Σ_j e^{γ_last−γ_j} dt_j x_j B_jᵀ                     (state passing).
 * The recurrence regrouped; f64 within the call as ssdScan. native/ssd_scan.cc runs it as small f32 GEMMs.
 */
export function ssdScanChunked(
  x: Float32Array,
  dt: Float32Array,
  b: Float32Array,
  c: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: SsdParams,
  state: Float32Array,
  out: Float32Array,
  chunk = RECURRENCE_CHUNK,
): void {
  const { numHeads: H, headDim: P, stateSize: N, nGroups: G } = params;
  const perGroup = ssdHeadsPerGroup('ssdScan', params);
  if (!(Number.isInteger(chunk) && chunk >= 1)) throw new RangeError(`ssdScan: chunk ${chunk} must be a positive integer`);
  const rows = Math.floor(dt.length / H);
  const headState = P * N;
  const numSlots = Math.floor(state.length / (H * headState));
  for (const { qStart, qLen, slot } of seqs) {
    if (!(qStart >= 0 && qLen >= 0 && qStart + qLen <= rows))
      throw new RangeError(`ssdScan: rows [${qStart}, ${qStart + qLen}) outside ${rows}`);
    if (!(Number.isInteger(slot) && slot >= 0 && slot < numSlots)) throw new RangeError(`ssdScan: state slot ${slot} outside ${numSlots}`);
  }
  const S = new Float64Array(headState);
  const gam = new Float64Array(chunk);
  const step = new Float64Array(chunk);
  for (const { qStart, qLen, slot } of seqs) {
    for (let h = 0; h < H; h++) {
      const sBase = (slot * H + h) * headState;
      for (let i = 0; i < headState; i++) S[i] = state[sBase + i];
      const grp = Math.floor(h / perGroup);
      const a = params.a[h];
      const d = params.d[h];
      for (let t0 = qStart; t0 < qStart + qLen; t0 += chunk) {
        const n = Math.min(chunk, qStart + qLen - t0);
        let acc = 0;
        for (let t = 0; t < n; t++) {
          step[t] = Math.min(Math.max(softplus(dt[(t0 + t) * H + h] + params.dtBias[h]), params.dtMin), params.dtMax);
          acc += step[t] * a;
          gam[t] = acc;
        }
        const bc = (t: number): number => ((t0 + t) * G + grp) * N;
        const xo = (t: number): number => ((t0 + t) * H + h) * P;
        for (let t = 0; t < n; t++) {
          // L[t, j] = e^{γ_t − γ_j} (C_t·B_j) dt_j, j ≤ t.
          const l = new Float64Array(t + 1);
          for (let j = 0; j <= t; j++) {
            let cb = 0;
            for (let m = 0; m < N; m++) cb += c[bc(t) + m] * b[bc(j) + m];
            l[j] = Math.exp(gam[t] - gam[j]) * cb * step[j];
          }
          const eg = Math.exp(gam[t]);
          for (let p = 0; p < P; p++) {
            let sc = 0;
            for (let m = 0; m < N; m++) sc += S[p * N + m] * c[bc(t) + m];
            let y = eg * sc;
            for (let j = 0; j <= t; j++) y += l[j] * x[xo(j) + p];
            out[xo(t) + p] = y + d * x[xo(t) + p];
          }
        }
        const last = gam[n - 1];
        const eLast = Math.exp(last);
        for (let p = 0; p < P; p++)
          for (let m = 0; m < N; m++) {
            let s = eLast * S[p * N + m];
            for (let j = 0; j < n; j++) s += Math.exp(last - gam[j]) * step[j] * x[xo(j) + p] * b[bc(j) + m];
            S[p * N + m] = s;
          }
      }
      for (let i = 0; i < headState; i++) state[sBase + i] = S[i];
    }
  }
}
