// --fp8-kv-calibration-tokens N: online max-norm calibration of the fp8 KV layer scales. Until N
// tokens have been stored, every storeKv first measures max |K| and max |V| of the rows it is
// given; a layer side's scale becomes running max / 448 (so the largest value seen lands on E4M3's
// largest finite value instead of the uncalibrated scale 1), and when a later batch raises the
// maximum, the slots stored so far are re-coded from the old scale to the new one — a byte-to-byte
// table, since an fp8 element is one byte — so every stored value keeps meaning what it did. After
// N tokens the scales stay fixed. Sides stored in another dtype are left alone (fp8 only).
//
// Limits: slots written to the swap space during calibration are read back at the scale they were
// written with (calibration is meant for the first requests after start-up, before the pool is
// under pressure).
import type { KvLayer, Ops } from '../kernels/ops.js';
import { FP8_E4M3_MAX, FP8_E4M3_TABLE, encodeFp8 } from '../kernels/kv-codec.js';

/** Scales below this are not used: an all-zero side keeps a usable scale. */
const MIN_SCALE = 2 ** -20;

interface SideState {
  amax: number;
}

interface LayerState {
  k: SideState;
  v: SideState;
  /** Tokens stored in this layer so far (calibration ends at the limit). */
  tokens: number;
  /** Every slot stored while calibrating: what a scale change must re-code. */
  slots: Set<number>;
}

/** Wraps `ops` so that storeKv calibrates fp8 layer scales over the first `tokens` tokens. */
export function withKvCalibration(ops: Ops, tokens: number): Ops {
  const states = new Map<KvLayer, LayerState>();
  const storeKv: Ops['storeKv'] = (layer, k, v, n, slots) => {
    let state = states.get(layer);
    if (!state) states.set(layer, (state = { k: { amax: 0 }, v: { amax: 0 }, tokens: 0, slots: new Set() }));
    if (state.tokens < tokens) {
      const width = layer.numKvHeads * layer.headDim;
      if (layer.kDtype === 'fp8') calibrate(layer, 'k', state.k, k, n * width, state.slots, width);
      if (layer.vDtype === 'fp8') calibrate(layer, 'v', state.v, v, n * width, state.slots, width);
      for (let i = 0; i < n; i++) state.slots.add(slots[i]);
      state.tokens += n;
      if (state.tokens >= tokens) state.slots.clear(); // fixed from now on
    }
    ops.storeKv(layer, k, v, n, slots);
  };
  return { ...ops, storeKv };
}

function calibrate(
  layer: KvLayer,
  side: 'k' | 'v',
  state: SideState,
  rows: Float32Array,
  count: number,
  stored: Set<number>,
  width: number,
): void {
  let amax = state.amax;
  for (let i = 0; i < count; i++) {
    const a = Math.abs(rows[i]);
    if (a > amax && Number.isFinite(a)) amax = a;
  }
  if (amax <= state.amax && state.amax > 0) return;
  state.amax = amax;
  const scaleKey = side === 'k' ? 'kScale' : 'vScale';
  const before = layer[scaleKey];
  const after = Math.max(MIN_SCALE, amax / FP8_E4M3_MAX);
  // The first batch of a layer has nothing stored before it (at any scale) to re-code.
  if (stored.size > 0 && after !== before) recode(layer[side], before, after, stored, width);
  layer[scaleKey] = after;
}

/** Re-codes the fp8 elements of the given slots from scale `from` to scale `to`. */
function recode(bytes: Uint8Array, from: number, to: number, slots: Set<number>, width: number): void {
  const table = new Uint8Array(256);
  for (let c = 0; c < 256; c++) table[c] = encodeFp8(Math.fround(Math.fround(FP8_E4M3_TABLE[c] * from) / to));
  for (const slot of slots) {
    const at = slot * width;
    for (let i = at; i < at + width; i++) bytes[i] = table[bytes[i]];
  }
}
