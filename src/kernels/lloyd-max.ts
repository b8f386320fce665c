// Lloyd–Max scalar quantizers of the standard Gaussian: the centroid tables of the turbo KV dtypes.
// scripts/gen-turbo-tables.ts writes this module's output into kv-turbo-tables.ts and
// native/kv_turbo_tables.h; test/unit/kv-turbo.test.ts re-derives it and compares.
//
// A Lloyd–Max quantizer is a fixed point of Lloyd's algorithm: each threshold is the midpoint of its
// two centroids, each centroid the mean of the density between its thresholds. Plain Lloyd
// iterations converge linearly and slowly for 256 levels, so after a warm-up they are finished by
// Newton's method on the same fixed-point equations (a tridiagonal system), then checked by one more
// Lloyd step. All in f64.

const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

function pdf(x: number): number {
  return INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}

// 16-point Gauss–Legendre nodes and weights on [-1, 1] (positive half; symmetric).
const GL_X = [
  0.0950125098376374, 0.2816035507792589, 0.4580167776572274, 0.6178762444026438, 0.755404408355003, 0.8656312023878318, 0.9445750230732326,
  0.9894009349916499,
];
const GL_W = [
  0.1894506104550685, 0.1826034150449236, 0.1691565193950025, 0.1495959888165767, 0.1246289712555339, 0.0951585116824928,
  0.0622535239386479, 0.0271524594117541,
];

/** ∫ pdf over [a, b], finite ends, by Gauss–Legendre on pieces at most 1/8 wide (exact to f64 rounding). */
function integrate(a: number, b: number): number {
  if (b <= a) return 0;
  const pieces = Math.max(1, Math.ceil((b - a) * 8));
  const h = (b - a) / pieces;
  let sum = 0;
  for (let p = 0; p < pieces; p++) {
    const mid = a + (p + 0.5) * h;
    let s = 0;
    for (let i = 0; i < GL_X.length; i++) s += GL_W[i] * (pdf(mid - (GL_X[i] * h) / 2) + pdf(mid + (GL_X[i] * h) / 2));
    sum += (s * h) / 2;
  }
  return sum;
}

/** Probability of [a, b] (ends may be infinite): the density is negligible 40 past the finite end. */
function mass(a: number, b: number): number {
  if (a === -Infinity) a = Math.min(b, 0) - 40;
  if (b === Infinity) b = Math.max(a, 0) + 40;
  return integrate(a, b);
}

/** pdf(x), with pdf(±∞) = 0. */
function density(x: number): number {
  return Number.isFinite(x) ? pdf(x) : 0;
}

/** Centroid of each cell between thresholds (t[-1] = -∞, t[L-1] = +∞): ∫x·pdf = pdf(a) - pdf(b). */
function centroids(t: Float64Array, out: Float64Array, masses: Float64Array): void {
  const L = t.length + 1;
  for (let k = 0; k < L; k++) {
    const a = k === 0 ? -Infinity : t[k - 1];
    const b = k === L - 1 ? Infinity : t[k];
    masses[k] = mass(a, b);
    out[k] = (density(a) - density(b)) / masses[k];
  }
}

function midpoints(c: Float64Array, t: Float64Array): void {
  for (let k = 0; k < t.length; k++) t[k] = (c[k] + c[k + 1]) / 2;
}

/**
 * The 2^bits centroids of the Lloyd–Max quantizer of N(0, 1), ascending and exactly antisymmetric
 * (c[L-1-k] = -c[k]).
 */
export function lloydMaxGaussian(bits: number): Float64Array {
  const L = 2 ** bits;
  const c = new Float64Array(L);
  const t = new Float64Array(L - 1);
  const m = new Float64Array(L);
  // Start evenly spread over ±(1 + bits / 2) and let Lloyd's algorithm settle the shape.
  const span = 1 + bits / 2;
  for (let k = 0; k < L; k++) c[k] = -span + (2 * span * (k + 0.5)) / L;
  for (let it = 0; it < 200; it++) {
    midpoints(c, t);
    centroids(t, c, m);
  }
  // Newton on F_k(t) = t_k - (c_k + c_{k+1}) / 2 = 0. A cell [a, b] with mass M and centroid c has
  // dc/da = pdf(a)(c - a)/M and dc/db = pdf(b)(b - c)/M.
  midpoints(c, t);
  const n = L - 1;
  const lower = new Float64Array(n),
    diag = new Float64Array(n),
    upper = new Float64Array(n),
    rhs = new Float64Array(n);
  for (let it = 0; it < 50; it++) {
    centroids(t, c, m);
    let worst = 0;
    for (let k = 0; k < n; k++) {
      const f = t[k] - (c[k] + c[k + 1]) / 2;
      worst = Math.max(worst, Math.abs(f));
      rhs[k] = -f;
      const dHiK = (density(t[k]) * (t[k] - c[k])) / m[k]; // dc_k / dt_k
      const dLoK1 = (density(t[k]) * (c[k + 1] - t[k])) / m[k + 1]; // dc_{k+1} / dt_k
      diag[k] = 1 - (dHiK + dLoK1) / 2;
      lower[k] = k > 0 ? -(density(t[k - 1]) * (c[k] - t[k - 1])) / m[k] / 2 : 0; // dF_k / dt_{k-1}
      upper[k] = k < n - 1 ? -(density(t[k + 1]) * (t[k + 1] - c[k + 1])) / m[k + 1] / 2 : 0; // dF_k / dt_{k+1}
    }
    if (worst < 1e-15) break;
    // Thomas algorithm.
    for (let k = 1; k < n; k++) {
      const w = lower[k] / diag[k - 1];
      diag[k] -= w * upper[k - 1];
      rhs[k] -= w * rhs[k - 1];
    }
    rhs[n - 1] /= diag[n - 1];
    for (let k = n - 2; k >= 0; k--) rhs[k] = (rhs[k] - upper[k] * rhs[k + 1]) / diag[k];
    for (let k = 0; k < n; k++) t[k] += rhs[k];
  }
  // A last Lloyd step from the converged thresholds, then the exact symmetry of the density.
  centroids(t, c, m);
  for (let k = 0; k < L / 2; k++) {
    const v = (c[L - 1 - k] - c[k]) / 2;
    c[k] = -v;
    c[L - 1 - k] = v;
  }
  return c;
}

/** One step of Lloyd's algorithm: the centroids of the nearest-centroid cells of `c`. */
export function lloydStep(c: Float64Array): Float64Array {
  const t = new Float64Array(c.length - 1);
  midpoints(c, t);
  const out = new Float64Array(c.length);
  centroids(t, out, new Float64Array(c.length));
  return out;
}

/** Mean squared error of quantizing N(0, 1) with these centroids (nearest-centroid cells). */
export function gaussianDistortion(c: Float64Array): number {
  const L = c.length;
  const t = new Float64Array(L - 1);
  midpoints(c, t);
  let d = 0;
  for (let k = 0; k < L; k++) {
    const a = k === 0 ? -Infinity : t[k - 1];
    const b = k === L - 1 ? Infinity : t[k];
    // ∫(x - c)² pdf = ∫x² pdf - 2c ∫x pdf + c² M, with ∫x² pdf over [a, b] = M + a·pdf(a) - b·pdf(b).
    const M = mass(a, b);
    const m1 = density(a) - density(b);
    const m2 = M + (Number.isFinite(a) ? a * pdf(a) : 0) - (Number.isFinite(b) ? b * pdf(b) : 0);
    d += m2 - 2 * c[k] * m1 + c[k] * c[k] * M;
  }
  return d;
}
