// An online model of one engine step's wall time (forward pass + sampling) from what is in it:
//
//   ms ≈ c0 + c1·tokens + c2·samples + c3·attention
//
// tokens: rows through the model (prefill tokens plus decode rows) — the weight matmuls;
// samples: rows whose logits are taken and sampled (decode rows, prompts that end) — the output
// projection over the vocabulary and the sampler; attention: Σ over the step's rows of the
// positions each attends to (qLen·start + qLen(qLen+1)/2 per chunk), which grows with context.
//
// Fitted by exponentially forgotten least squares: the sufficient statistics XᵀX and Xᵀy decay
// by `forgetting` per step, so the fit follows the machine (other load, a warm cache) within a
// few dozen steps. Coefficients are kept non-negative (an active-set solve), which keeps every
// prediction non-negative and monotone in each feature — what the prefill-budget search relies
// on. A small ridge toward the prior keeps the solve defined before the features have varied.
// Two guards for planning against a deadline: `margin` (the 90th percentile of measured /
// predicted time) and `covers` (predictions are trusted only near the sizes measured).

/** What a step holds, as the model sees it. */
export interface StepShape {
  tokens: number;
  samples: number;
  attention: number;
}

/** A chunk of a scheduled step, as far as its cost goes (ScheduledChunk fits). */
export interface ChunkShape {
  start: number;
  length: number;
  sample: boolean;
  /** A verify chunk's draft: each of its tokens is one more sampled row. */
  draft?: readonly number[];
}

export interface StepTimePredictor {
  /** Predicted wall time of a step of this shape, in ms (never negative). */
  predict(shape: StepShape): number;
  /** Enough steps seen for predictions to mean something. */
  readonly ready: boolean;
  /** Whether the shape is close enough to steps seen for its prediction to be trusted. */
  covers(shape: StepShape): boolean;
  /** What to multiply a prediction by for a time 90% of steps stay under (the noise of the machine). */
  readonly margin: number;
}

export interface StepTimeModelOptions {
  /** Weight kept by past steps per new step (0–1]; 0.98 ≈ the last 50 steps. */
  forgetting?: number;
  /** Steps before `ready`. */
  minSteps?: number;
  /** Prior coefficients [c0 ms, c1 ms/token, c2 ms/sample, c3 ms/attended position]. */
  prior?: readonly [number, number, number, number];
  /** Weight of the prior, in steps of the feature scale (tiny: data overrides it at once). */
  priorWeight?: number;
}

/** Attention positions of a chunk: row i of [start, start + length) attends to start + i + 1 positions. */
export function chunkAttention(start: number, length: number): number {
  return length * start + (length * (length + 1)) / 2;
}

/** The shape of a step made of these chunks. */
export function stepShape(chunks: readonly ChunkShape[]): StepShape {
  const shape: StepShape = { tokens: 0, samples: 0, attention: 0 };
  for (const c of chunks) addChunk(shape, c.start, c.length, c.sample ? 1 + (c.draft?.length ?? 0) : 0);
  return shape;
}

/** Adds a chunk, with the rows of it that sample, to a shape in place (and returns it). */
export function addChunk(shape: StepShape, start: number, length: number, sampledRows: number): StepShape {
  shape.tokens += length;
  shape.samples += sampledRows;
  shape.attention += chunkAttention(start, length);
  return shape;
}

/** How far beyond the largest step seen (in tokens and in attention) a prediction is trusted. */
export const TRUST_FACTOR = 2;
/** The quantile of measured / predicted time that `margin` tracks, and its step size. */
const MARGIN_QUANTILE = 0.9;
const MARGIN_RATE = 0.05;

const N = 4;
// Features are divided by these before fitting, so the normal equations are well scaled
// (tokens in the hundreds, attention in the millions).
const SCALE = [1, 256, 8, 1 << 20];

export class StepTimeModel implements StepTimePredictor {
  private readonly forgetting: number;
  private readonly minSteps: number;
  private readonly prior: number[];
  private readonly priorWeight: number;
  /** Σ w·x·xᵀ and Σ w·x·y over scaled features (row-major N×N, and N). */
  private readonly xtx = new Float64Array(N * N);
  private readonly xty = new Float64Array(N);
  private coef: number[] | null = null;
  /** Steps observed since start. */
  steps = 0;
  /** The largest tokens and attention of any step observed. */
  private maxTokens = 0;
  private maxAttention = 0;
  private quantile = 1;

  constructor(options: StepTimeModelOptions = {}) {
    this.forgetting = options.forgetting ?? 0.98;
    this.minSteps = options.minSteps ?? 8;
    // Scaled coefficients: c·scale.
    this.prior = [...(options.prior ?? [0, 0, 0, 0])].map((c, i) => c * SCALE[i]);
    this.priorWeight = options.priorWeight ?? 1e-3;
  }

  get margin(): number {
    return this.quantile;
  }

  get ready(): boolean {
    return this.steps >= this.minSteps;
  }

  /** Records a measured step. */
  observe(shape: StepShape, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.trackMargin(shape, ms);
    const x = features(shape);
    const f = this.forgetting;
    for (let i = 0; i < N; i++) {
      this.xty[i] = f * this.xty[i] + x[i] * ms;
      for (let j = 0; j < N; j++) this.xtx[i * N + j] = f * this.xtx[i * N + j] + x[i] * x[j];
    }
    this.steps++;
    this.coef = null;
    this.maxTokens = Math.max(this.maxTokens, shape.tokens);
    this.maxAttention = Math.max(this.maxAttention, shape.attention);
  }

  /**
   * A cost the steps seen never varied is fitted near 0 (a model fed only decode steps knows
   * nothing of long prefill chunks), so a prediction is trusted only up to TRUST_FACTOR times the
   * largest step seen: bigger steps are approached by doubling, each measured before the next.
   */
  covers(shape: StepShape): boolean {
    return shape.tokens <= TRUST_FACTOR * this.maxTokens && shape.attention <= TRUST_FACTOR * this.maxAttention;
  }

  /**
   * The fit is of the mean, so about half the steps planned right at a deadline would run over it.
   * `margin` follows the 90th percentile of measured / predicted time (stochastic quantile steps:
   * up by 0.9·rate when a step runs over it, down by 0.1·rate otherwise), so a busy machine's
   * noise is planned for.
   */
  private trackMargin(shape: StepShape, ms: number): void {
    if (!this.ready || !this.covers(shape)) return;
    const predicted = this.predict(shape);
    if (predicted <= 0) return;
    const over = ms / predicted > this.quantile ? 1 : 0;
    this.quantile = Math.min(4, Math.max(0.5, this.quantile + MARGIN_RATE * (over - (1 - MARGIN_QUANTILE))));
  }

  predict(shape: StepShape): number {
    const c = this.coefficients();
    const x = features(shape);
    let ms = 0;
    for (let i = 0; i < N; i++) ms += c[i] * x[i];
    return Math.max(0, ms);
  }

  /** [ms per step, per token, per sample, per attended position], unscaled (for stats and tests). */
  costs(): number[] {
    return this.coefficients().map((c, i) => c / SCALE[i]);
  }

  private coefficients(): number[] {
    if (this.coef) return this.coef;
    // Ridge toward the prior: (XᵀX + λI) c = Xᵀy + λ·prior.
    const a = Float64Array.from(this.xtx);
    const b = Float64Array.from(this.xty);
    for (let i = 0; i < N; i++) {
      a[i * N + i] += this.priorWeight;
      b[i] += this.priorWeight * this.prior[i];
    }
    this.coef = solveNonNegative(a, b);
    return this.coef;
  }
}

function features(s: StepShape): number[] {
  return [1, s.tokens / SCALE[1], s.samples / SCALE[2], s.attention / SCALE[3]];
}

/**
 * Minimizes cᵀAc/2 − bᵀc over c ≥ 0 for a positive definite A (N×N): solve on the free set,
 * drop the most negative coefficient, repeat; then bring back any dropped one whose gradient says
 * it should grow. With four unknowns this takes a few tiny solves.
 */
function solveNonNegative(a: Float64Array, b: Float64Array): number[] {
  const free = new Set<number>([...Array(N).keys()]);
  for (let round = 0; round < 2 * N; round++) {
    const c = solveOn(a, b, free);
    let worst = -1;
    for (const i of free) if (c[i] < 0 && (worst < 0 || c[i] < c[worst])) worst = i;
    if (worst >= 0) {
      free.delete(worst);
      continue;
    }
    // Optimal unless a fixed coefficient would lower the objective by growing.
    let grow = -1;
    let best = 1e-12;
    for (let i = 0; i < N; i++) {
      if (free.has(i)) continue;
      let g = b[i];
      for (let j = 0; j < N; j++) g -= a[i * N + j] * c[j];
      if (g > best) {
        best = g;
        grow = i;
      }
    }
    if (grow < 0) return c;
    free.add(grow);
  }
  return solveOn(a, b, free).map((v) => Math.max(0, v));
}

/** Solves A c = b restricted to the free indices (the others 0), by Gaussian elimination. */
function solveOn(a: Float64Array, b: Float64Array, free: ReadonlySet<number>): number[] {
  const idx = [...free];
  const n = idx.length;
  const m = idx.map((i) => [...idx.map((j) => a[i * N + j]), b[i]]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r][col]) > Math.abs(m[pivot][col])) pivot = r;
    [m[col], m[pivot]] = [m[pivot], m[col]];
    const p = m[col][col];
    if (Math.abs(p) < 1e-300) continue;
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const k = m[r][col] / p;
      if (k !== 0) for (let k2 = col; k2 <= n; k2++) m[r][k2] -= k * m[col][k2];
    }
  }
  const c = new Array<number>(N).fill(0);
  idx.forEach((i, r) => {
    const p = m[r][r];
    c[i] = Math.abs(p) < 1e-300 ? 0 : m[r][n] / p;
  });
  return c;
}
