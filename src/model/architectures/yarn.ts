// YaRN rotary scaling (arXiv 2309.00071) as transformers computes it (modeling_rope_utils'
// _compute_yarn_parameters): inverse frequencies blended between interpolated (divided by the factor)
// and extrapolated (plain) ones by a linear ramp over the correction range that beta_fast / beta_slow
// give, and an attention factor that multiplies cos and sin. Every tensor step in f32, as transformers.
import type { YarnConfig } from '../types.js';

/** transformers' get_mscale: 0.1 · mscale · ln(scale) + 1 (1 when scale ≤ 1). */
export function yarnMscale(scale: number, mscale = 1): number {
  return scale <= 1 ? 1 : 0.1 * mscale * Math.log(scale) + 1;
}

/** The dimension (of `dim`) whose wavelength makes `rotations` turns over `maxPositions` (find_correction_dim). */
function correctionDim(rotations: number, dim: number, base: number, maxPositions: number): number {
  return (dim * Math.log(maxPositions / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
}

/** YaRN's inverse frequencies [dim / 2] for a rotary part of `dim` elements at base `theta`. */
export function yarnRopeInvFreq(dim: number, theta: number, yarn: YarnConfig): Float32Array {
  const f = Math.fround;
  const half = dim / 2;
  let low = correctionDim(yarn.betaFast, dim, theta, yarn.originalMaxPositionEmbeddings);
  let high = correctionDim(yarn.betaSlow, dim, theta, yarn.originalMaxPositionEmbeddings);
  if (yarn.truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001; // transformers: prevent a singular ramp
  const out = new Float32Array(half);
  for (let k = 0; k < half; k++) {
    const posFreq = f(Math.pow(theta, f((2 * k) / dim)));
    const extrapolation = f(1 / posFreq);
    const interpolation = f(1 / f(yarn.factor * posFreq));
    const ramp = Math.min(1, Math.max(0, f(f(k - low) / f(high - low))));
    const extrapolationFactor = f(1 - ramp);
    out[k] = f(f(interpolation * f(1 - extrapolationFactor)) + f(extrapolation * extrapolationFactor));
  }
  return out;
}
