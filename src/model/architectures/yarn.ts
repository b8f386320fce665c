// YaRN RoPE scaling (rope_scaling / rope_parameters rope_type 'yarn'; GPT-OSS, DeepSeek-V2), as transformers'
// _compute_yarn_parameters computes it: per rotary pair k, the inverse frequency blends the
// extrapolated θ^(-2k/dim) and the interpolated one (divided by `factor`) with a linear ramp between
// the correction dims of beta_fast and beta_slow rotations over original_max_position_embeddings
// (floored / ceiled unless `truncate` is false), and cos / sin are multiplied by the attention factor
// (given, else mscale's 0.1·ln(factor) + 1, or the mscale / mscale_all_dim ratio). Every tensor step is
// rounded to f32 as torch does it; the result goes to ops.rope as RopeFrequencies {invFreq, scale}.
import type { RopeFrequencies } from '../../kernels/ops.js';
import type { YarnRopeConfig } from '../types.js';

export type { YarnRopeConfig } from '../types.js';

type Json = Readonly<Record<string, unknown>>;

/** A rope parameter object's YaRN fields (throws on a malformed one); `maxPositions` stands in for an absent factor's numerator. */
export function readYarnRope(rope: Json, maxPositions: number): YarnRopeConfig {
  const num = (key: string): number | undefined => {
    const v = rope[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new Error(`rope_scaling yarn ${key} must be a number, got ${JSON.stringify(v)}`);
    return v;
  };
  const original = num('original_max_position_embeddings');
  if (original === undefined || !(original > 0)) throw new Error('rope_scaling yarn needs a positive original_max_position_embeddings');
  const factor = num('factor') ?? maxPositions / original;
  if (!(factor > 0)) throw new Error(`rope_scaling yarn factor ${factor} is not positive`);
  const truncate = rope.truncate;
  if (truncate !== undefined && truncate !== null && typeof truncate !== 'boolean')
    throw new Error('rope_scaling yarn truncate must be a boolean');
  const attentionFactor = num('attention_factor');
  const mscale = num('mscale');
  const mscaleAllDim = num('mscale_all_dim');
  return {
    factor,
    originalMaxPositionEmbeddings: original,
    // transformers: `get("beta_fast") or 32` — 0 and null fall back too.
    betaFast: num('beta_fast') || 32,
    betaSlow: num('beta_slow') || 1,
    truncate: truncate ?? true,
    ...(attentionFactor !== undefined ? { attentionFactor } : {}),
    ...(mscale !== undefined ? { mscale } : {}),
    ...(mscaleAllDim !== undefined ? { mscaleAllDim } : {}),
  };
}

/** transformers' get_mscale: 0.1 · mscale · ln(scale) + 1 (1 when scale ≤ 1). */
export function yarnMscale(scale: number, mscale = 1): number {
  return scale <= 1 ? 1 : 0.1 * mscale * Math.log(scale) + 1;
}

/** YaRN's attention factor (the cos / sin scale). */
export function yarnAttentionFactor(y: YarnRopeConfig): number {
  if (y.attentionFactor !== undefined) return y.attentionFactor;
  if (y.mscale && y.mscaleAllDim) return yarnMscale(y.factor, y.mscale) / yarnMscale(y.factor, y.mscaleAllDim);
  return yarnMscale(y.factor);
}

/** The ramp's inputs: the fields both YarnRopeConfig (GPT-OSS) and YarnConfig (DeepSeek-V2) carry. */
type YarnRamp = Pick<YarnRopeConfig, 'factor' | 'originalMaxPositionEmbeddings' | 'betaFast' | 'betaSlow' | 'truncate'>;

/** YaRN's inverse frequencies [dim / 2] for a rotary part of `dim` elements at base `theta`. */
export function yarnRopeInvFreq(dim: number, theta: number, y: YarnRamp): Float32Array {
  const f = Math.fround;
  const half = dim / 2;
  // Dim index at which a frequency makes numRotations turns over the original context.
  const correctionDim = (rotations: number): number =>
    (dim * Math.log(y.originalMaxPositionEmbeddings / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
  let low = correctionDim(y.betaFast);
  let high = correctionDim(y.betaSlow);
  if (y.truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001; // transformers: prevents a singular ramp
  const invFreq = new Float32Array(half);
  for (let k = 0; k < half; k++) {
    const posFreq = f(Math.pow(theta, f((2 * k) / dim)));
    const extrapolation = f(1 / posFreq);
    const interpolation = f(1 / f(y.factor * posFreq));
    const ramp = Math.min(1, Math.max(0, f(f(k - low) / f(high - low))));
    const extrapolationFactor = f(1 - ramp);
    invFreq[k] = f(f(interpolation * f(1 - extrapolationFactor)) + f(extrapolation * extrapolationFactor));
  }
  return invFreq;
}

/** The rope frequencies YaRN gives a rotary dimension `dim` (headDim · partial factor) at base `theta`. */
export function yarnRopeFrequencies(
  dim: number,
  theta: number,
  y: YarnRopeConfig,
): RopeFrequencies & { invFreq: Float32Array; scale: number } {
  return { rotaryDim: dim, invFreq: yarnRopeInvFreq(dim, theta, y), scale: yarnAttentionFactor(y) };
}
