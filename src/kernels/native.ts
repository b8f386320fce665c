// The C++ kernel addon (build/Release/svc_native.node) behind the `Ops` interface. Typed arrays go
// to the addon as they are (no copies); this file checks shapes first so a wrong call throws a
// TypeError naming the argument instead of reaching native code. The addon checks memory bounds
// again on its side.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnv } from '../common/env.js';
import type { AttentionParams, AttentionSeq, KvLayer, MoeExperts, Ops, RopeStyle, WeightMatrix } from './ops.js';
import { KV_DTYPES, WEIGHT_DTYPES, type KvDTypeTraits } from './dtypes.js';

/** Kernel path: scalar C++, AVX2+FMA, AVX-512 (F/BW/VL/VNNI), or AVX-512 plus AMX-INT8 tiles for packed Q8_0 / Q4_0 matmuls of 16+ rows. */
export type CpuPath = 'scalar' | 'avx2' | 'avx512' | 'amx';

export interface NativeInfo {
  /** Path in use (SVC_CPU_FEATURES or setCpuPath may pick a slower one than bestCpuPath). */
  cpuPath: CpuPath;
  bestCpuPath: CpuPath;
  /** Threads per op, the calling thread included (SVC_THREADS, default one per core). */
  threads: number;
  /** Microseconds idle kernel threads spin before they sleep (SVC_SPIN_US). */
  spinUs: number;
  features: Record<'avx2' | 'fma' | 'f16c' | 'avx512f' | 'avx512bw' | 'avx512vl' | 'avx512vnni' | 'avx512bf16' | 'amxInt8', boolean>;
}

/** The raw addon surface (argument order is the C++ binding's, see native/*.cc). */
export interface NativeAddon {
  mapFile(path: string): ArrayBuffer;
  matmul(
    x: Float32Array,
    n: number,
    dtype: number,
    rows: number,
    cols: number,
    w: Uint8Array,
    y: Float32Array,
    bias: Float32Array | undefined,
  ): void;
  embed(ids: Int32Array, dtype: number, rows: number, cols: number, w: Uint8Array, out: Float32Array): void;
  /** A dtype with a `packedCode` (Q8_0, Q4_0, the 32-element fallbacks, Q4_K-Q6_K) -> the packed layout of native/packed.h; undefined for other dtypes. */
  packWeight(dtype: number, rows: number, cols: number, w: Uint8Array): ArrayBuffer | undefined;
  rmsnorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, eps: number, out: Float32Array): void;
  rope(x: Float32Array, n: number, numHeads: number, headDim: number, positions: Int32Array, theta: number, neox: boolean): void;
  siluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number): void;
  add(a: Float32Array, b: Float32Array, out: Float32Array, len: number): void;
  storeKv(
    kDtype: number,
    vDtype: number,
    numBlocks: number,
    blockSize: number,
    numKvHeads: number,
    headDim: number,
    k: Uint8Array,
    v: Uint8Array,
    kScale: number,
    vScale: number,
    kRows: Float32Array,
    vRows: Float32Array,
    n: number,
    slots: Int32Array,
  ): void;
  attention(
    kDtype: number,
    vDtype: number,
    numBlocks: number,
    blockSize: number,
    numKvHeads: number,
    headDim: number,
    k: Uint8Array,
    v: Uint8Array,
    kScale: number,
    vScale: number,
    q: Float32Array,
    out: Float32Array,
    totalRows: number,
    numHeads: number,
    scale: number,
    slidingWindow: number,
    seqMeta: Int32Array,
    blockTables: Int32Array,
  ): void;
  info(): NativeInfo;
  setCpuPath(path: CpuPath): void;
  setNumThreads(n: number): void;
  setSpinMicros(us: number): void;
  /** The C++ traits rows, each at its code (native/dtypes.cc). */
  dtypeTraits(): NativeDTypeTraits;
}

export interface NativeDTypeTraits {
  weights: { name: string; blockElements: number; blockBytes: number; packed: number }[];
  /** rowBytes[hd]: bytes of one head vector of hd values, for hd in [0, KV_ROW_BYTES_HEAD_DIMS). */
  kv: { name: string; rowBytes: number[]; align: number; scaled: boolean; rotated: boolean }[];
}

// Packed layouts (native/packed.h): Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / K-quant rows regrouped 16 at a time for the int8
// kernels, made by prepareWeight (a dtype's `packedCode`). A packed weight keeps its dtype; what
// marks it is its data array, registered here with the layout's code. Only nativeOps reads these bytes.
const PACK_ROWS = 16;
const packedData = new WeakMap<Uint8Array, number>();

/** True when w was packed by nativeOps.prepareWeight (its bytes are not in GGUF block order). */
export function isPackedWeight(w: WeightMatrix): boolean {
  return packedData.has(w.data);
}

let loaded: NativeAddon | null = null;

/**
 * The addon, loaded on first use (so importing this module never fails when it is not built).
 * Found by walking up from this file to the directory holding build/Release/svc_native.node.
 */
export function loadAddon(): NativeAddon {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'build', 'Release', 'svc_native.node');
    if (existsSync(candidate)) {
      const addon = require(candidate) as NativeAddon;
      configureFromEnv(addon);
      loaded = addon;
      return loaded;
    }
    dir = dirname(dir);
  }
  throw new Error('svc native addon not found (build/Release/svc_native.node): run `npx node-gyp rebuild`');
}

/**
 * Hands the addon its environment settings (the addon reads no environment variables itself):
 * SVC_THREADS, SVC_SPIN_US, SVC_CPU_FEATURES. An invalid value throws the EnvError naming the
 * variable, so start-up fails with it. A path this CPU lacks is a warning, and the best path stays.
 */
function configureFromEnv(addon: NativeAddon): void {
  const threads = readEnv('SVC_THREADS');
  const spinUs = readEnv('SVC_SPIN_US');
  const cpuPath = readEnv('SVC_CPU_FEATURES');
  if (threads !== null) addon.setNumThreads(threads);
  if (spinUs !== null) addon.setSpinMicros(spinUs);
  if (cpuPath !== null) {
    try {
      addon.setCpuPath(cpuPath);
    } catch {
      process.stderr.write(`svc: SVC_CPU_FEATURES=${cpuPath} is not supported by this CPU; using ${addon.info().cpuPath}\n`);
    }
  }
}

/** Kernel path and thread count, for start-up logs. */
export function nativeInfo(): NativeInfo {
  return loadAddon().info();
}

/** The addon's dtype traits rows (for the test that they agree with WEIGHT_DTYPES / KV_DTYPES). */
export function nativeDTypeTraits(): NativeDTypeTraits {
  return loadAddon().dtypeTraits();
}

/** Force a kernel path (tests of the fallbacks); throws when the CPU lacks it. */
export function setCpuPath(path: CpuPath): void {
  loadAddon().setCpuPath(path);
}

/** Threads per op, the calling thread included. */
export function setNumThreads(n: number): void {
  loadAddon().setNumThreads(n);
}

// ---- argument checks ----

function fail(op: string, msg: string): never {
  throw new TypeError(`${op}: ${msg}`);
}

function checkCount(op: string, name: string, v: number, min = 0): void {
  if (!Number.isInteger(v) || v < min) fail(op, `${name} must be an integer >= ${min}, got ${v}`);
}

function checkLength(op: string, name: string, arr: ArrayLike<number>, need: number): void {
  if (arr.length < need) fail(op, `${name} has ${arr.length} elements, needs ${need}`);
}

function checkKind(op: string, name: string, arr: unknown, kind: typeof Float32Array | typeof Int32Array | typeof Uint8Array): void {
  if (!(arr instanceof kind)) fail(op, `${name} must be a ${kind.name}`);
}

/** The dtype code the addon gets for w (a packed code for packed weights), after checking w's shape and size. */
function checkWeight(op: string, w: WeightMatrix): number {
  const traits = WEIGHT_DTYPES[w.dtype] as (typeof WEIGHT_DTYPES)[keyof typeof WEIGHT_DTYPES] | undefined;
  if (traits === undefined) fail(op, `unsupported weight dtype ${String(w.dtype)}`);
  checkCount(op, 'weight rows', w.rows);
  checkCount(op, 'weight cols', w.cols, 1);
  const { blockElements, blockBytes } = traits;
  if (w.cols % blockElements !== 0) fail(op, `${w.dtype} weight cols must be a multiple of ${blockElements}, got ${w.cols}`);
  checkKind(op, 'weight data', w.data, Uint8Array);
  const packed = packedData.get(w.data);
  // Packed matrices are padded to whole groups of 16 rows.
  const rows = packed === undefined ? w.rows : Math.ceil(w.rows / PACK_ROWS) * PACK_ROWS;
  const need = rows * (w.cols / blockElements) * blockBytes;
  if (w.data.byteLength < need) fail(op, `${w.dtype} weight [${w.rows}, ${w.cols}] needs ${need} bytes, data has ${w.data.byteLength}`);
  return packed ?? traits.code;
}

/** True when two views share bytes (matmul's output must not overwrite an input other threads still read). */
function overlaps(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}

function kvTraits(op: string, side: 'k' | 'v', dtype: KvLayer['kDtype']): KvDTypeTraits {
  const traits = KV_DTYPES[dtype] as KvDTypeTraits | undefined;
  if (traits === undefined) fail(op, `unsupported ${side === 'k' ? 'K' : 'V'} dtype ${String(dtype)}`);
  return traits;
}

/** Checks the layer's shape and both sides' storage; the addon gets each side's dtype code. */
function checkLayer(op: string, layer: KvLayer): void {
  checkCount(op, 'layer.numBlocks', layer.numBlocks);
  checkCount(op, 'layer.blockSize', layer.blockSize, 1);
  checkCount(op, 'layer.numKvHeads', layer.numKvHeads, 1);
  checkCount(op, 'layer.headDim', layer.headDim, 1);
  const rows = layer.numBlocks * layer.blockSize * layer.numKvHeads;
  checkSide(op, 'k', kvTraits(op, 'k', layer.kDtype), layer.kDtype, layer.k, layer.kScale, rows, layer.headDim);
  checkSide(op, 'v', kvTraits(op, 'v', layer.vDtype), layer.vDtype, layer.v, layer.vScale, rows, layer.headDim);
}

function checkSide(
  op: string,
  side: 'k' | 'v',
  traits: KvDTypeTraits,
  dtype: string,
  arr: Uint8Array,
  scale: number,
  rows: number,
  headDim: number,
): void {
  const name = `layer.${side}`;
  checkKind(op, name, arr, Uint8Array);
  const bytes = rows * traits.rowBytes(headDim);
  if (arr.byteLength < bytes) fail(op, `${name} has ${arr.byteLength} bytes, the layer needs ${bytes}`);
  if (arr.byteOffset % traits.align !== 0) fail(op, `${name} must be aligned to ${traits.align} bytes for ${dtype}`);
  if (traits.scaled && !(scale > 0)) fail(op, `${dtype} ${side}Scale must be positive`);
}

// Attention's per-sequence metadata, marshalled into two reusable Int32Arrays per call.
let seqMeta = new Int32Array(5 * 64);
let blockTables = new Int32Array(4096);

function marshalSeqs(seqs: AttentionSeq[]): { meta: Int32Array; tables: Int32Array } {
  let tableLen = 0;
  for (const s of seqs) tableLen += s.blockTable.length;
  if (seqMeta.length < seqs.length * 5) seqMeta = new Int32Array(Math.max(seqs.length * 5, seqMeta.length * 2));
  if (blockTables.length < tableLen) blockTables = new Int32Array(Math.max(tableLen, blockTables.length * 2));
  let off = 0;
  for (let i = 0; i < seqs.length; i++) {
    const s = seqs[i];
    if (!(s.blockTable instanceof Int32Array)) fail('attention', `seqs[${i}].blockTable must be an Int32Array`);
    seqMeta[i * 5] = s.qStart;
    seqMeta[i * 5 + 1] = s.qLen;
    seqMeta[i * 5 + 2] = s.kvLen;
    seqMeta[i * 5 + 3] = off;
    seqMeta[i * 5 + 4] = s.blockTable.length;
    blockTables.set(s.blockTable, off);
    off += s.blockTable.length;
  }
  return { meta: seqMeta.subarray(0, seqs.length * 5), tables: blockTables.subarray(0, tableLen) };
}

// moe's scratch: the rows routed to one expert, gathered, and its activations; grown, never shrunk.
const moeScratch = {
  rows: new Int32Array(64),
  scales: new Float32Array(64),
  x: new Float32Array(0) as Float32Array,
  g: new Float32Array(0) as Float32Array,
  u: new Float32Array(0) as Float32Array,
  y: new Float32Array(0) as Float32Array,
};

function growF32(a: Float32Array, len: number): Float32Array {
  return a.length >= len ? a : new Float32Array(Math.max(len, a.length * 2));
}

/** The routed experts, one expert at a time: its rows gathered, gate/up/down as three native matmuls, scattered back weighted. */
function moe(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number, out: Float32Array): void {
  const held = experts.gate.find((g) => g !== null);
  if (held === undefined) fail('moe', 'no expert held');
  const hidden = held.cols;
  checkCount('moe', 'n', n);
  checkCount('moe', 'k', k, 1);
  checkKind('moe', 'x', x, Float32Array);
  checkKind('moe', 'out', out, Float32Array);
  checkKind('moe', 'ids', ids, Int32Array);
  checkKind('moe', 'weights', weights, Float32Array);
  checkLength('moe', 'x', x, n * hidden);
  checkLength('moe', 'out', out, n * hidden);
  checkLength('moe', 'ids', ids, n * k);
  checkLength('moe', 'weights', weights, n * k);
  if (overlaps(x, out)) fail('moe', 'out must not overlap x');
  out.fill(0, 0, n * hidden);
  const s = moeScratch;
  if (s.rows.length < n) {
    s.rows = new Int32Array(n * 2);
    s.scales = new Float32Array(n * 2);
  }
  const numExperts = experts.gate.length;
  for (let i = 0; i < n * k; i++)
    if (ids[i] < 0 || ids[i] >= numExperts) fail('moe', `expert id ${ids[i]} outside the ${numExperts} experts`);
  for (let e = 0; e < numExperts; e++) {
    const gate = experts.gate[e],
      up = experts.up[e],
      down = experts.down[e];
    if (gate === null || up === null || down === null) continue;
    let m = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < k; j++)
        if (ids[i * k + j] === e) {
          s.rows[m] = i;
          s.scales[m++] = weights[i * k + j];
        }
    if (m === 0) continue;
    const inter = gate.rows;
    s.x = growF32(s.x, m * hidden);
    s.g = growF32(s.g, m * inter);
    s.u = growF32(s.u, m * inter);
    s.y = growF32(s.y, m * hidden);
    for (let r = 0; r < m; r++) s.x.set(x.subarray(s.rows[r] * hidden, (s.rows[r] + 1) * hidden), r * hidden);
    const xs = s.x.subarray(0, m * hidden),
      g = s.g.subarray(0, m * inter),
      u = s.u.subarray(0, m * inter),
      y = s.y.subarray(0, m * hidden);
    nativeOps.matmul(xs, m, gate, g);
    nativeOps.matmul(xs, m, up, u);
    loadAddon().siluMul(g, u, g, m * inter);
    nativeOps.matmul(g, m, down, y);
    for (let r = 0; r < m; r++) {
      const base = s.rows[r] * hidden,
        w = s.scales[r];
      for (let h = 0; h < hidden; h++) out[base + h] += w * y[r * hidden + h];
    }
  }
}

// ---- the ops ----

export const nativeOps: Ops = {
  name: 'native',

  // Weights of a dtype with a `packedCode` are repacked into 16-row groups (native/packed.h) that the int8 kernels
  // stream without per-block shuffling; matmul and embed both read that layout, so a tied embedding
  // table serves as lm_head unchanged. Other dtypes are multiplied in their loaded layout.
  prepareWeight(w) {
    const packedCode = WEIGHT_DTYPES[w.dtype]?.packedCode ?? null;
    if (packedCode === null || packedData.has(w.data)) return w;
    const code = checkWeight('prepareWeight', w);
    const buf = loadAddon().packWeight(code, w.rows, w.cols, w.data);
    if (buf === undefined) return w;
    const data = new Uint8Array(buf);
    packedData.set(data, packedCode);
    return { dtype: w.dtype, rows: w.rows, cols: w.cols, data };
  },

  matmul(x, n, w, y, bias) {
    const code = checkWeight('matmul', w);
    checkCount('matmul', 'n', n);
    checkKind('matmul', 'x', x, Float32Array);
    checkKind('matmul', 'y', y, Float32Array);
    checkLength('matmul', 'x', x, n * w.cols);
    checkLength('matmul', 'y', y, n * w.rows);
    if (overlaps(x, y)) fail('matmul', 'y must not overlap x');
    if (bias !== undefined) {
      checkKind('matmul', 'bias', bias, Float32Array);
      checkLength('matmul', 'bias', bias, w.rows);
    }
    loadAddon().matmul(x, n, code, w.rows, w.cols, w.data, y, bias);
  },

  embed(ids, table, out) {
    const code = checkWeight('embed', table);
    checkKind('embed', 'ids', ids, Int32Array);
    checkKind('embed', 'out', out, Float32Array);
    checkLength('embed', 'out', out, ids.length * table.cols);
    loadAddon().embed(ids, code, table.rows, table.cols, table.data, out);
  },

  rmsnorm(x, rows, dim, weight, eps, out) {
    checkCount('rmsnorm', 'rows', rows);
    checkCount('rmsnorm', 'dim', dim, 1);
    checkKind('rmsnorm', 'x', x, Float32Array);
    checkKind('rmsnorm', 'weight', weight, Float32Array);
    checkKind('rmsnorm', 'out', out, Float32Array);
    checkLength('rmsnorm', 'x', x, rows * dim);
    checkLength('rmsnorm', 'weight', weight, dim);
    checkLength('rmsnorm', 'out', out, rows * dim);
    loadAddon().rmsnorm(x, rows, dim, weight, eps, out);
  },

  rope(x, n, numHeads, headDim, positions, theta, style: RopeStyle) {
    checkCount('rope', 'n', n);
    checkCount('rope', 'numHeads', numHeads, 1);
    checkCount('rope', 'headDim', headDim, 2);
    if (headDim % 2 !== 0) fail('rope', `headDim must be even, got ${headDim}`);
    if (style !== 'neox' && style !== 'normal') fail('rope', `style must be 'neox' or 'normal', got ${String(style)}`);
    checkKind('rope', 'x', x, Float32Array);
    checkKind('rope', 'positions', positions, Int32Array);
    checkLength('rope', 'x', x, n * numHeads * headDim);
    checkLength('rope', 'positions', positions, n);
    loadAddon().rope(x, n, numHeads, headDim, positions, theta, style === 'neox');
  },

  siluMul(gate, up, out, len) {
    checkCount('siluMul', 'len', len);
    for (const [name, arr] of [
      ['gate', gate],
      ['up', up],
      ['out', out],
    ] as const) {
      checkKind('siluMul', name, arr, Float32Array);
      checkLength('siluMul', name, arr, len);
    }
    loadAddon().siluMul(gate, up, out, len);
  },

  add(a, b, out, len) {
    checkCount('add', 'len', len);
    for (const [name, arr] of [
      ['a', a],
      ['b', b],
      ['out', out],
    ] as const) {
      checkKind('add', name, arr, Float32Array);
      checkLength('add', name, arr, len);
    }
    loadAddon().add(a, b, out, len);
  },

  storeKv(layer, k, v, n, slots) {
    checkLayer('storeKv', layer);
    checkCount('storeKv', 'n', n);
    const width = layer.numKvHeads * layer.headDim;
    checkKind('storeKv', 'k', k, Float32Array);
    checkKind('storeKv', 'v', v, Float32Array);
    checkKind('storeKv', 'slots', slots, Int32Array);
    checkLength('storeKv', 'k', k, n * width);
    checkLength('storeKv', 'v', v, n * width);
    checkLength('storeKv', 'slots', slots, n);
    loadAddon().storeKv(
      KV_DTYPES[layer.kDtype].code,
      KV_DTYPES[layer.vDtype].code,
      layer.numBlocks,
      layer.blockSize,
      layer.numKvHeads,
      layer.headDim,
      layer.k,
      layer.v,
      layer.kScale,
      layer.vScale,
      k,
      v,
      n,
      slots,
    );
  },

  attention(q, layer, seqs, params: AttentionParams, out) {
    checkLayer('attention', layer);
    const { numHeads, scale, slidingWindow } = params;
    checkCount('attention', 'numHeads', numHeads, 1);
    if (numHeads % layer.numKvHeads !== 0) fail('attention', `numHeads ${numHeads} is not a multiple of numKvHeads ${layer.numKvHeads}`);
    if (!Number.isFinite(scale)) fail('attention', `scale must be finite, got ${scale}`);
    if (slidingWindow !== null) checkCount('attention', 'slidingWindow', slidingWindow, 1);
    checkKind('attention', 'q', q, Float32Array);
    checkKind('attention', 'out', out, Float32Array);
    // Every (row, head) is read into scratch before it is written, so out may even alias q.
    // The addon checks each sequence's rows against totalRows.
    const totalRows = Math.floor(Math.min(q.length, out.length) / (numHeads * layer.headDim));
    const { meta, tables } = marshalSeqs(seqs);
    loadAddon().attention(
      KV_DTYPES[layer.kDtype].code,
      KV_DTYPES[layer.vDtype].code,
      layer.numBlocks,
      layer.blockSize,
      layer.numKvHeads,
      layer.headDim,
      layer.k,
      layer.v,
      layer.kScale,
      layer.vScale,
      q,
      out,
      totalRows,
      numHeads,
      scale,
      slidingWindow ?? 0,
      meta,
      tables,
    );
  },

  moe,
};
