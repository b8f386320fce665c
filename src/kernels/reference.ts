// Plain-TypeScript kernels: the numerical ground truth the native ops are tested against.
// Written for obviousness, not speed: sums accumulate in f64 (JS numbers), results are stored as f32.
import type {
  AttentionParams,
  AttentionSeq,
  GeluKind,
  KvLayer,
  MlaAttentionParams,
  MoeExperts,
  Ops,
  RopeFrequencies,
  RopeStyle,
  WeightMatrix,
} from './ops.js';
import type { MoeActivation } from './ops.js';
import { KV_DTYPES, dequantizeRow } from './dtypes.js';
import { causalConv1d, gatedDeltaRule } from './reference-recurrent.js';
import { ssdScan } from './reference-ssd.js';

function matmul(x: Float32Array, n: number, w: WeightMatrix, y: Float32Array, bias?: Float32Array): void {
  const { rows, cols } = w;
  const row = new Float32Array(cols);
  // Dequantize each weight row once, then dot it with every input row. Four input rows go together only
  // so their four independent sums overlap in the CPU (a single running sum is latency-bound); each
  // output is still the plain left-to-right sum over cols.
  for (let r = 0; r < rows; r++) {
    dequantizeRow(w.dtype, w.data, r, cols, row, 0);
    const b = bias ? bias[r] : 0;
    let i = 0;
    for (; i + 4 <= n; i += 4) {
      const x0 = i * cols,
        x1 = x0 + cols,
        x2 = x1 + cols,
        x3 = x2 + cols;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      for (let c = 0; c < cols; c++) {
        const wc = row[c];
        s0 += x[x0 + c] * wc;
        s1 += x[x1 + c] * wc;
        s2 += x[x2 + c] * wc;
        s3 += x[x3 + c] * wc;
      }
      y[i * rows + r] = s0 + b;
      y[(i + 1) * rows + r] = s1 + b;
      y[(i + 2) * rows + r] = s2 + b;
      y[(i + 3) * rows + r] = s3 + b;
    }
    for (; i < n; i++) {
      const xOff = i * cols;
      let sum = 0;
      for (let c = 0; c < cols; c++) sum += x[xOff + c] * row[c];
      y[i * rows + r] = sum + b;
    }
  }
}

function embed(ids: Int32Array, table: WeightMatrix, out: Float32Array): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id < 0 || id >= table.rows) throw new RangeError(`token id ${id} outside the embedding table (${table.rows} rows)`);
    dequantizeRow(table.dtype, table.data, id, table.cols, out, i * table.cols);
  }
}

function rmsnorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, eps: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const off = r * dim;
    let sumSq = 0;
    for (let d = 0; d < dim; d++) sumSq += x[off + d] * x[off + d];
    const inv = 1 / Math.sqrt(sumSq / dim + eps);
    for (let d = 0; d < dim; d++) out[off + d] = x[off + d] * inv * weight[d];
  }
}

/** theta^(-2k/headDim) for each pair k, rounded to f32 as HF computes inv_freq (and so the angle, in f32). */
export function ropeInvFreq(headDim: number, theta: number): Float64Array {
  const half = headDim / 2;
  const invFreq = new Float64Array(half);
  for (let k = 0; k < half; k++) invFreq[k] = Math.fround(1 / Math.fround(Math.pow(theta, Math.fround((2 * k) / headDim))));
  return invFreq;
}

/** Rotates pair (a, b) of x by the f32-rounded angle. */
function rotatePair(x: Float32Array, a: number, b: number, angle: number): void {
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const x1 = x[a];
  const x2 = x[b];
  x[a] = x1 * cos - x2 * sin;
  x[b] = x2 * cos + x1 * sin;
}

function rope(
  x: Float32Array,
  n: number,
  numHeads: number,
  headDim: number,
  positions: Int32Array,
  theta: number,
  style: RopeStyle,
  freqs?: RopeFrequencies,
): void {
  if (freqs) {
    ropeWith(x, n, numHeads, headDim, positions, theta, style, freqs);
    return;
  }
  const half = headDim / 2;
  // Pair k turns at theta^(-2k/headDim). HF computes inv_freq and the angle in f32; doing the same
  // keeps long positions (where f32 angle rounding shows) matching it.
  const invFreq = ropeInvFreq(headDim, theta);
  for (let i = 0; i < n; i++) {
    const pos = positions[i];
    for (let h = 0; h < numHeads; h++) {
      const base = (i * numHeads + h) * headDim;
      for (let k = 0; k < half; k++) {
        // neox pairs element k with k+half (rotate_half); normal pairs adjacent elements 2k, 2k+1.
        const a = style === 'neox' ? base + k : base + 2 * k;
        const b = style === 'neox' ? base + k + half : base + 2 * k + 1;
        rotatePair(x, a, b, Math.fround(pos * invFreq[k]));
      }
    }
  }
}

/** rope with RopeFrequencies: the first rotaryDim elements of each head rotate, pairs within them; cos and sin scaled. */
function ropeWith(
  x: Float32Array,
  n: number,
  numHeads: number,
  headDim: number,
  positions: Int32Array,
  theta: number,
  style: RopeStyle,
  freqs: RopeFrequencies,
): void {
  const rot = freqs.rotaryDim ?? headDim;
  if (!Number.isInteger(rot) || rot < 2 || rot % 2 !== 0 || rot > headDim) {
    throw new RangeError(`rope: rotaryDim ${rot} is not an even number from 2 to headDim ${headDim}`);
  }
  const half = rot / 2;
  if (freqs.invFreq && freqs.invFreq.length !== half)
    throw new RangeError(`rope: ${freqs.invFreq.length} inverse frequencies for ${half} pairs`);
  const invFreq = freqs.invFreq ?? ropeInvFreq(rot, theta);
  const scale = freqs.scale ?? 1;
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < numHeads; h++) {
      const base = (i * numHeads + h) * headDim;
      for (let k = 0; k < half; k++) {
        const a = style === 'neox' ? base + k : base + 2 * k;
        const b = style === 'neox' ? base + k + half : base + 2 * k + 1;
        // The angle in f32, as HF; cos and sin scaled after (HF multiplies its cos/sin tables by attention_scaling).
        const angle = Math.fround(positions[i] * invFreq[k]);
        const cos = Math.cos(angle) * scale;
        const sin = Math.sin(angle) * scale;
        const x1 = x[a];
        const x2 = x[b];
        x[a] = x1 * cos - x2 * sin;
        x[b] = x2 * cos + x1 * sin;
      }
    }
  }
}

function ropeMulti(
  x: Float32Array,
  n: number,
  numHeads: number,
  headDim: number,
  positions: Int32Array,
  sections: Int32Array,
  theta: number,
): void {
  const half = headDim / 2;
  const invFreq = ropeInvFreq(headDim, theta);
  // HF builds cos/sin per position row, then takes frequency k's from the row of the section k falls
  // in (mrope_section repeated for both halves: both elements of a neox pair agree).
  if (sections.some((len) => len < 0) || sections.reduce((a, b) => a + b, 0) !== half) {
    throw new RangeError(`ropeMulti: sections [${sections.join(', ')}] do not split headDim / 2 = ${half}`);
  }
  const row = new Int32Array(half);
  for (let s = 0, start = 0; s < sections.length; start += sections[s++]) row.fill(s, start, start + sections[s]);
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < numHeads; h++) {
      const base = (i * numHeads + h) * headDim;
      for (let k = 0; k < half; k++) rotatePair(x, base + k, base + k + half, Math.fround(positions[row[k] * n + i] * invFreq[k]));
    }
  }
}

function siluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number): void {
  for (let i = 0; i < len; i++) {
    const g = gate[i];
    out[i] = (g / (1 + Math.exp(-g))) * up[i];
  }
}

/** GPT-OSS's clamped SwiGLU (MoeActivation), in f64 rounded once to f32. out may alias gate. */
export function clampedSwiglu(gate: Float32Array, up: Float32Array, out: Float32Array, len: number, act: MoeActivation): void {
  const { alpha, limit } = act;
  for (let i = 0; i < len; i++) {
    const g = Math.min(gate[i], limit);
    const u = Math.min(Math.max(up[i], -limit), limit);
    out[i] = (u + 1) * (g / (1 + Math.exp(-alpha * g)));
  }
}

function add(a: Float32Array, b: Float32Array, out: Float32Array, len: number): void {
  for (let i = 0; i < len; i++) out[i] = a[i] + b[i];
}

function layerNorm(
  x: Float32Array,
  rows: number,
  dim: number,
  weight: Float32Array,
  bias: Float32Array,
  eps: number,
  out: Float32Array,
): void {
  for (let r = 0; r < rows; r++) {
    const off = r * dim;
    let sum = 0;
    for (let d = 0; d < dim; d++) sum += x[off + d];
    const mean = sum / dim;
    // Two passes (mean, then the centred squares): no cancellation when |mean| ≫ the spread.
    let sumSq = 0;
    for (let d = 0; d < dim; d++) sumSq += (x[off + d] - mean) * (x[off + d] - mean);
    const inv = 1 / Math.sqrt(sumSq / dim + eps);
    for (let d = 0; d < dim; d++) out[off + d] = (x[off + d] - mean) * inv * weight[d] + bias[d];
  }
}

/** erf(x) = 2/√π · x · e^(−x²) · Σ (2x²)^n / (1·3···(2n+1)): every term positive, so no cancellation; ±1 beyond |x| ≥ 6. */
function erf(x: number): number {
  const a = Math.abs(x);
  if (a >= 6) return Math.sign(x);
  let term = 1,
    sum = 1;
  for (let n = 1; term > 1e-17 * sum; n++) {
    term *= (2 * a * a) / (2 * n + 1);
    sum += term;
  }
  return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * a * Math.exp(-a * a) * sum;
}

/** erfc(x) in double precision: 1 − erf(x), and from x ≥ 3 (where that would cancel) the continued fraction of e^(x²)·erfc(x). */
function erfc(x: number): number {
  if (x < 3) return 1 - erf(x);
  let f = x;
  for (let n = 80; n >= 1; n--) f = x + n / 2 / f;
  return Math.exp(-x * x) / (Math.sqrt(Math.PI) * f);
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

// Each GELU in a form whose negative tail does not cancel: 0.5·(1 + erf(x/√2)) = 0.5·erfc(−x/√2), and
// 0.5·(1 + tanh(u)) = σ(2u) = 1 / (1 + e^(−2u)).
function geluOf(v: number, kind: GeluKind): number {
  if (kind === 'erf') return 0.5 * v * erfc(-v / Math.SQRT2);
  if (kind === 'tanh') return v / (1 + Math.exp(-2 * SQRT_2_OVER_PI * (v + 0.044715 * v * v * v)));
  return v / (1 + Math.exp(-1.702 * v));
}

function gelu(x: Float32Array, out: Float32Array, len: number, kind: GeluKind): void {
  for (let i = 0; i < len; i++) out[i] = geluOf(x[i], kind);
}

// The activation is rounded to f32 before the product, as torch's f32 MLP computes it.
function geluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number, kind: GeluKind): void {
  for (let i = 0; i < len; i++) out[i] = Math.fround(geluOf(gate[i], kind)) * up[i];
}

function softcap(x: Float32Array, out: Float32Array, len: number, cap: number): void {
  if (!(cap > 0)) throw new RangeError(`softcap: cap must be positive, got ${cap}`);
  for (let i = 0; i < len; i++) out[i] = cap * Math.tanh(x[i] / cap);
}

function bidirectionalAttention(
  q: Float32Array,
  nq: number,
  k: Float32Array,
  v: Float32Array,
  nk: number,
  numHeads: number,
  headDim: number,
  scale: number,
  out: Float32Array,
): void {
  const width = numHeads * headDim;
  const scores = new Float64Array(nk);
  const acc = new Float64Array(headDim);
  for (let i = 0; i < nq; i++) {
    for (let h = 0; h < numHeads; h++) {
      const qOff = i * width + h * headDim;
      let max = -Infinity;
      for (let t = 0; t < nk; t++) {
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += q[qOff + d] * k[t * width + h * headDim + d];
        scores[t] = dot * scale;
        if (scores[t] > max) max = scores[t];
      }
      let denom = 0;
      acc.fill(0);
      for (let t = 0; t < nk; t++) {
        const p = Math.exp(scores[t] - max);
        denom += p;
        for (let d = 0; d < headDim; d++) acc[d] += p * v[t * width + h * headDim + d];
      }
      // Written only after this (row, head)'s query was read: out may alias q.
      for (let d = 0; d < headDim; d++) out[qOff + d] = acc[d] / denom;
    }
  }
}

// K and V are coded each with its own dtype's codec (KV_DTYPES) and scale, one head vector (row) at a time.
function storeKv(layer: KvLayer, k: Float32Array, v: Float32Array, n: number, slots: Int32Array): void {
  const { numKvHeads, headDim } = layer;
  const kTraits = KV_DTYPES[layer.kDtype],
    vTraits = KV_DTYPES[layer.vDtype];
  const kRow = kTraits.rowBytes(headDim),
    vRow = vTraits.rowBytes(headDim);
  const totalSlots = layer.numBlocks * layer.blockSize;
  for (let i = 0; i < n; i++) {
    const slot = slots[i];
    if (slot < 0 || slot >= totalSlots) throw new RangeError(`KV slot ${slot} outside the cache (${totalSlots} slots)`);
    for (let h = 0; h < numKvHeads; h++) {
      const src = (i * numKvHeads + h) * headDim;
      const row = slot * numKvHeads + h;
      kTraits.encode(layer.kScale, k, src, headDim, layer.k, row * kRow);
      vTraits.encode(layer.vScale, v, src, headDim, layer.v, row * vRow);
    }
  }
}

/** Decode one sequence's first kvLen tokens of k and v for one KV head into [kvLen, headDim] buffers. */
function gatherHead(layer: KvLayer, seq: AttentionSeq, kvHead: number, keys: Float32Array, values: Float32Array): void {
  const { blockSize, numKvHeads, headDim } = layer;
  const kTraits = KV_DTYPES[layer.kDtype],
    vTraits = KV_DTYPES[layer.vDtype];
  const kRow = kTraits.rowBytes(headDim),
    vRow = vTraits.rowBytes(headDim);
  for (let t = 0; t < seq.kvLen; t++) {
    const block = seq.blockTable[Math.floor(t / blockSize)];
    const row = (block * blockSize + (t % blockSize)) * numKvHeads + kvHead;
    kTraits.decode(layer.kScale, layer.k, row * kRow, headDim, keys, t * headDim);
    vTraits.decode(layer.vScale, layer.v, row * vRow, headDim, values, t * headDim);
  }
}

function attention(q: Float32Array, layer: KvLayer, seqs: AttentionSeq[], params: AttentionParams, out: Float32Array): void {
  const { numHeads, scale, slidingWindow } = params;
  const cap = params.softcap ?? 0;
  const sinks = params.sinks;
  const { numKvHeads, headDim } = layer;
  if (numHeads % numKvHeads !== 0) throw new RangeError(`numHeads ${numHeads} is not a multiple of numKvHeads ${numKvHeads}`);
  if (sinks && sinks.length !== numHeads) throw new RangeError(`attention: ${sinks.length} sinks for ${numHeads} heads`);
  const group = numHeads / numKvHeads;
  for (const seq of seqs) {
    const keys = new Float32Array(seq.kvLen * headDim);
    const values = new Float32Array(seq.kvLen * headDim);
    const scores = new Float64Array(seq.kvLen);
    for (let kvHead = 0; kvHead < numKvHeads; kvHead++) {
      gatherHead(layer, seq, kvHead, keys, values);
      // HF GQA: query head h reads kv head floor(h / group).
      for (let h = kvHead * group; h < (kvHead + 1) * group; h++) {
        for (let j = 0; j < seq.qLen; j++) {
          const pos = seq.kvLen - seq.qLen + j;
          // HF sliding window: a query at pos sees key t when pos - t < window.
          const first = slidingWindow === null ? 0 : Math.max(0, pos - slidingWindow + 1);
          const qOff = ((seq.qStart + j) * numHeads + h) * headDim;
          let max = -Infinity;
          for (let t = first; t <= pos; t++) {
            let dot = 0;
            for (let d = 0; d < headDim; d++) dot += q[qOff + d] * keys[t * headDim + d];
            scores[t] = dot * scale;
            // Gemma 2: scores soft-capped before the mask and softmax.
            if (cap > 0) scores[t] = cap * Math.tanh(scores[t] / cap);
            if (scores[t] > max) max = scores[t];
          }
          // GPT-OSS: the head's sink logit joins the softmax (and its max); its share is dropped.
          if (sinks && sinks[h] > max) max = sinks[h];
          let denom = sinks ? Math.exp(sinks[h] - max) : 0;
          for (let t = first; t <= pos; t++) {
            scores[t] = Math.exp(scores[t] - max);
            denom += scores[t];
          }
          for (let d = 0; d < headDim; d++) {
            let acc = 0;
            for (let t = first; t <= pos; t++) acc += scores[t] * values[t * headDim + d];
            out[qOff + d] = acc / denom;
          }
        }
      }
    }
  }
}

/** An MLA latent layer's checks: one KV head, a value part shorter than the row, a dtype whose rows decode to x itself. */
export function checkLatentLayer(op: string, layer: KvLayer, latentDim?: number): void {
  if (layer.numKvHeads !== 1) throw new RangeError(`${op}: an MLA layer has one KV head, not ${layer.numKvHeads}`);
  if (KV_DTYPES[layer.kDtype].rotated)
    throw new RangeError(`${op}: KV dtype ${layer.kDtype} (rotated rows) is not supported for MLA layers`);
  if (latentDim !== undefined && !(Number.isInteger(latentDim) && latentDim >= 1 && latentDim <= layer.headDim))
    throw new RangeError(`${op}: latentDim ${latentDim} must be an integer from 1 to headDim ${layer.headDim}`);
}

// MLA: one latent row per token, in the K side's codec.
function storeLatentKv(layer: KvLayer, latent: Float32Array, n: number, slots: Int32Array): void {
  checkLatentLayer('storeLatentKv', layer);
  const { headDim } = layer;
  const traits = KV_DTYPES[layer.kDtype];
  const rowBytes = traits.rowBytes(headDim);
  const totalSlots = layer.numBlocks * layer.blockSize;
  for (let i = 0; i < n; i++) {
    const slot = slots[i];
    if (slot < 0 || slot >= totalSlots) throw new RangeError(`KV slot ${slot} outside the cache (${totalSlots} slots)`);
    traits.encode(layer.kScale, latent, i * headDim, headDim, layer.k, slot * rowBytes);
  }
}

// MLA attention in float64: scores over whole latent rows, values their first latentDim elements.
function mlaAttention(q: Float32Array, layer: KvLayer, seqs: AttentionSeq[], params: MlaAttentionParams, out: Float32Array): void {
  const { numHeads, scale, latentDim } = params;
  checkLatentLayer('mlaAttention', layer, latentDim);
  const { headDim, blockSize } = layer;
  const traits = KV_DTYPES[layer.kDtype];
  const rowBytes = traits.rowBytes(headDim);
  for (const seq of seqs) {
    const rows = new Float32Array(seq.kvLen * headDim);
    for (let t = 0; t < seq.kvLen; t++) {
      const slot = seq.blockTable[Math.floor(t / blockSize)] * blockSize + (t % blockSize);
      traits.decode(layer.kScale, layer.k, slot * rowBytes, headDim, rows, t * headDim);
    }
    const scores = new Float64Array(seq.kvLen);
    const acc = new Float64Array(latentDim);
    for (let j = 0; j < seq.qLen; j++) {
      const pos = seq.kvLen - seq.qLen + j;
      for (let h = 0; h < numHeads; h++) {
        const qOff = ((seq.qStart + j) * numHeads + h) * headDim;
        let max = -Infinity;
        for (let t = 0; t <= pos; t++) {
          let dot = 0;
          for (let d = 0; d < headDim; d++) dot += q[qOff + d] * rows[t * headDim + d];
          scores[t] = dot * scale;
          if (scores[t] > max) max = scores[t];
        }
        let denom = 0;
        acc.fill(0);
        for (let t = 0; t <= pos; t++) {
          const p = Math.exp(scores[t] - max);
          denom += p;
          for (let d = 0; d < latentDim; d++) acc[d] += p * rows[t * headDim + d];
        }
        const oOff = ((seq.qStart + j) * numHeads + h) * latentDim;
        for (let d = 0; d < latentDim; d++) out[oOff + d] = acc[d] / denom;
      }
    }
  }
}

// Row by row, expert by expert, in float64 accumulation through matmul's own dot products.
function moe(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number, out: Float32Array): void {
  const hidden = experts.gate.find((g) => g !== null)?.cols;
  if (hidden === undefined) throw new RangeError('moe: no expert held');
  out.fill(0, 0, n * hidden);
  for (let i = 0; i < n; i++) {
    const row = x.subarray(i * hidden, (i + 1) * hidden);
    for (let j = 0; j < k; j++) {
      const e = ids[i * k + j];
      if (e < 0 || e >= experts.gate.length) throw new RangeError(`moe: expert id ${e} outside the ${experts.gate.length} experts`);
      const gate = experts.gate[e],
        up = experts.up[e],
        down = experts.down[e];
      if (gate === null || up === null || down === null) continue;
      const g = new Float32Array(gate.rows);
      const u = new Float32Array(up.rows);
      const bias = experts.bias;
      matmul(row, 1, gate, g, bias?.gate[e] ?? undefined);
      matmul(row, 1, up, u, bias?.up[e] ?? undefined);
      if (experts.activation) clampedSwiglu(g, u, g, gate.rows, experts.activation);
      else siluMul(g, u, g, gate.rows);
      const y = new Float32Array(hidden);
      matmul(g, 1, down, y, bias?.down[e] ?? undefined);
      const wgt = weights[i * k + j];
      for (let h = 0; h < hidden; h++) out[i * hidden + h] += wgt * y[h];
    }
  }
}

export const referenceOps: Ops = {
  name: 'reference',
  prepareWeight: (w) => w,
  matmul,
  embed,
  rmsnorm,
  rope,
  ropeMulti,
  siluMul,
  add,
  layerNorm,
  gelu,
  geluMul,
  softcap,
  bidirectionalAttention,
  storeKv,
  attention,
  storeLatentKv,
  mlaAttention,
  moe,
  causalConv1d,
  gatedDeltaRule,
  ssdScan,
};
