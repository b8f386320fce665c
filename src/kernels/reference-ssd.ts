// Plain-TypeScript Mamba2 selective state-space scan (SSD) in its recurrent form, as transformers'
// Mamba2Mixer / NemotronHMamba2Mixer torch_forward computes a cached step (its chunked prefill is the
// same recurrence, regrouped). Sums and the state within one call are f64; inputs, outputs and the
// stored state are f32.
import type { RecurrentSeq, SsdParams } from './ops.js';

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
