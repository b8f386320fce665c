// Rotary embeddings other than plain RoPE over the whole head, for the decoder layer: partial rotary
// (Phi-3's partial_rotary_factor: only the first rotaryDim elements of a head rotate) and LongRoPE
// (Phi-3 "128k" / Phi-3.5 / Phi-4-mini: per-frequency divisors of the inverse frequencies, and an
// attention factor multiplying cos and sin).
//
// LongRoPE's two factor sets, as transformers picks them: each forward computes seq_len =
// max(position_ids) + 1 and uses long_factor when seq_len > original_max_position_embeddings,
// short_factor otherwise (modeling_rope_utils' longrope frequency update). svc mirrors this per
// sequence per forward step: a sequence whose rows in this step reach a position ≥
// original_max_position_embeddings has all those rows rotated with long_factor, else short_factor,
// whatever other sequences share the batch (HF batches share one choice; svc runs each sequence as
// HF would run it alone). Keys already in the cache keep the rotation they were stored with, as in
// HF's KV cache: a sequence that crosses the threshold during decode (or in a later prefill chunk)
// has its earlier keys short-rotated and the rest long-rotated, exactly as HF's generate() with
// the same prefill; a prompt that crosses it in one prefill step is long-rotated throughout, as HF.
// So svc matches HF's whole-sequence logits when the first step already reaches the threshold,
// and HF's incremental generation in every case given the same chunking.
import type { AttentionSeq, Ops, RopeFrequencies } from '../../kernels/ops.js';
import type { ModelConfig } from '../types.js';

export interface LongRopeFrequencies {
  /** Inverse frequencies [rotaryDim / 2] with short_factor, and with long_factor. */
  readonly short: Float32Array;
  readonly long: Float32Array;
  /** long_factor from this many positions in a step (original_max_position_embeddings). */
  readonly originalMax: number;
  /** cos and sin multiplied by this (LongRoPE's attention factor). */
  readonly attentionFactor: number;
}

/** DecoderOptions.rotary: how q and k rotate where it is not plain RoPE over the whole head. */
export interface RotaryOptions {
  /** Leading elements of each head that rotate (≤ headDim, even). */
  readonly rotaryDim: number;
  readonly longRope?: LongRopeFrequencies;
}

/**
 * HF LongRoPE's inverse frequencies, 1 / (factor_k · theta^(2k/rotaryDim)), every step in f32 as
 * transformers computes them (arange(0, dim, 2).float() / dim, base ** that, times the f32 factors).
 */
export function longRopeInvFreq(rotaryDim: number, theta: number, factors: readonly number[]): Float32Array {
  const half = rotaryDim / 2;
  if (factors.length !== half) throw new RangeError(`LongRoPE: ${factors.length} factors for ${half} rotary frequencies`);
  const out = new Float32Array(half);
  for (let k = 0; k < half; k++) {
    const base = Math.fround(Math.pow(theta, Math.fround((2 * k) / rotaryDim)));
    out[k] = Math.fround(1 / Math.fround(Math.fround(factors[k]) * base));
  }
  return out;
}

/**
 * HF 'linear' rope scaling's inverse frequencies: theta^(-2k/headDim) in f32, then divided by the
 * factor in f32 (inv_freq /= factor), as transformers computes them.
 */
export function linearRopeInvFreq(headDim: number, theta: number, factor: number): Float32Array {
  if (!(factor > 0)) throw new RangeError(`linear RoPE scaling: factor must be positive, got ${factor}`);
  const half = headDim / 2;
  const out = new Float32Array(half);
  for (let k = 0; k < half; k++)
    out[k] = Math.fround(Math.fround(1 / Math.fround(Math.pow(theta, Math.fround((2 * k) / headDim)))) / Math.fround(factor));
  return out;
}

/** The config's rotary variant (partial rotary and/or LongRoPE), or undefined for plain RoPE. */
export function rotaryOptions(c: ModelConfig): RotaryOptions | undefined {
  const rotaryDim = c.rotaryDim ?? c.headDim;
  const lr = c.longRope;
  if (rotaryDim === c.headDim && !lr) return undefined;
  if (!lr) return { rotaryDim };
  return {
    rotaryDim,
    longRope: {
      short: longRopeInvFreq(rotaryDim, c.ropeTheta, lr.shortFactor),
      long: longRopeInvFreq(rotaryDim, c.ropeTheta, lr.longFactor),
      originalMax: lr.originalMaxPositionEmbeddings,
      attentionFactor: lr.attentionFactor,
    },
  };
}

/**
 * Per row of a step: whether LongRoPE uses long_factor for it. A sequence's rows all take its
 * choice (max position in the step + 1 > originalMax); rows outside every sequence, their own.
 */
export function longRopeRows(positions: Int32Array, n: number, seqs: readonly AttentionSeq[], originalMax: number): Uint8Array {
  const long = new Uint8Array(n);
  for (let i = 0; i < n; i++) long[i] = positions[i] + 1 > originalMax ? 1 : 0;
  for (const s of seqs) {
    let max = -1;
    for (let i = s.qStart; i < s.qStart + s.qLen && i < n; i++) max = Math.max(max, positions[i]);
    long.fill(max + 1 > originalMax ? 1 : 0, s.qStart, Math.min(n, s.qStart + s.qLen));
  }
  return long;
}

/** Rotates q [n, numHeads, headDim] and k [n, numKvHeads, headDim] in place as `rotary` says. */
export function applyRotary(
  ops: Ops,
  c: ModelConfig,
  rotary: RotaryOptions,
  q: Float32Array,
  k: Float32Array,
  n: number,
  positions: Int32Array,
  seqs: readonly AttentionSeq[],
): void {
  const lr = rotary.longRope;
  if (!lr) {
    const freqs: RopeFrequencies = { rotaryDim: rotary.rotaryDim };
    ops.rope(q, n, c.numHeads, c.headDim, positions, c.ropeTheta, 'neox', freqs);
    ops.rope(k, n, c.numKvHeads, c.headDim, positions, c.ropeTheta, 'neox', freqs);
    return;
  }
  const long = longRopeRows(positions, n, seqs, lr.originalMax);
  const qw = c.numHeads * c.headDim;
  const kw = c.numKvHeads * c.headDim;
  // Runs of rows with one choice; q then k of a run, so the native cos/sin table is built once per run.
  for (let start = 0; start < n;) {
    let end = start + 1;
    while (end < n && long[end] === long[start]) end++;
    const freqs: RopeFrequencies = { rotaryDim: rotary.rotaryDim, invFreq: long[start] ? lr.long : lr.short, scale: lr.attentionFactor };
    const pos = positions.subarray(start, end);
    ops.rope(q.subarray(start * qw, end * qw), end - start, c.numHeads, c.headDim, pos, c.ropeTheta, 'neox', freqs);
    ops.rope(k.subarray(start * kw, end * kw), end - start, c.numKvHeads, c.headDim, pos, c.ropeTheta, 'neox', freqs);
    start = end;
  }
}
