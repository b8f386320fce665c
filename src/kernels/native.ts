// The C++ kernel addon (build/Release/svc_native.node) behind the `Ops` interface. Typed arrays go
// to the addon as they are (no copies); this file checks shapes first so a wrong call throws a
// TypeError naming the argument instead of reaching native code. The addon checks memory bounds
// again on its side.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEnv } from '../common/env.js';
import type {
  AttentionParams,
  AttentionSeq,
  GatedDeltaParams,
  GeluKind,
  KvLayer,
  MlaAttentionParams,
  MoeExperts,
  Ops,
  RecurrentSeq,
  RopeFrequencies,
  RopeStyle,
  SsdParams,
  WeightMatrix,
} from './ops.js';
import { ssdHeadsPerGroup } from './reference-ssd.js';
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
  features: Record<
    'avx2' | 'fma' | 'f16c' | 'avx512f' | 'avx512bw' | 'avx512vl' | 'avx512vnni' | 'avx512bf16' | 'avx512vbmi' | 'amxInt8',
    boolean
  >;
}

/** The raw addon surface (argument order is the C++ binding's, see native/*.cc). */
export interface NativeAddon {
  mapFile(path: string): ArrayBuffer;
  /** native/mmap.cc: zeroed bytes, 2 MiB aligned, transparent huge pages asked for; freed when collected. */
  allocHugePages(bytes: number): ArrayBuffer;
  /** native/mmap.cc: V8's LowMemoryNotification on the calling thread's isolate (src/kernels/release-heap.ts). */
  releaseHeapMemory(): void;
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
  /** After (x, n, cols): (dtype, rows, w, y, bias) per matrix (native/matmul.cc matmul_shared). */
  matmulShared(x: Float32Array, n: number, cols: number, ...parts: (number | Uint8Array | Float32Array | undefined)[]): void;
  embed(ids: Int32Array, dtype: number, rows: number, cols: number, w: Uint8Array, out: Float32Array): void;
  /** A dtype with a `packedCode` (Q8_0, Q4_0, the 32-element fallbacks, Q4_K-Q6_K) -> the packed layout of native/packed.h; undefined for other dtypes. */
  packWeight(dtype: number, rows: number, cols: number, w: Uint8Array): ArrayBuffer | undefined;
  /** Bytes packWeight makes of such a matrix; undefined when the dtype has no packed layout. */
  packedBytes(dtype: number, rows: number, cols: number): number | undefined;
  /** native/packed.h kPackFormatVersion: bumped whenever a packed layout's bytes change. */
  packFormatVersion: number;
  rmsnorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, eps: number, out: Float32Array): void;
  rope(x: Float32Array, n: number, numHeads: number, headDim: number, positions: Int32Array, theta: number, neox: boolean): void;
  /** rope with RopeFrequencies: rotaryDim, invFreq [rotaryDim / 2] or null (theta's), cos/sin scale. */
  rope(
    x: Float32Array,
    n: number,
    numHeads: number,
    headDim: number,
    positions: Int32Array,
    theta: number,
    neox: boolean,
    rotaryDim: number,
    invFreq: Float32Array | null,
    scale: number,
  ): void;
  ropeMulti(
    x: Float32Array,
    n: number,
    numHeads: number,
    headDim: number,
    positions: Int32Array,
    sections: Int32Array,
    theta: number,
  ): void;
  siluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number): void;
  add(a: Float32Array, b: Float32Array, out: Float32Array, len: number): void;
  argmax(x: Float32Array, len: number): number;
  layerNorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, bias: Float32Array, eps: number, out: Float32Array): void;
  /** kind: GELU_CODES. */
  gelu(x: Float32Array, out: Float32Array, len: number, kind: number): void;
  /** kind: GELU_CODES. */
  geluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number, kind: number): void;
  softcap(x: Float32Array, out: Float32Array, len: number, cap: number): void;
  bidirectionalAttention(
    q: Float32Array,
    nq: number,
    k: Float32Array,
    v: Float32Array,
    nk: number,
    numHeads: number,
    headDim: number,
    scale: number,
    out: Float32Array,
  ): void;
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
    /** 0: none. */
    softcap: number,
    /** One sink logit per query head; absent: none. */
    sinks?: Float32Array,
  ): void;
  /** MLA latent layer (native/mla_attention.cc): kDtype, numBlocks, blockSize, headDim, k, kScale first. */
  storeLatentKv(
    kDtype: number,
    numBlocks: number,
    blockSize: number,
    headDim: number,
    k: Uint8Array,
    kScale: number,
    latent: Float32Array,
    n: number,
    slots: Int32Array,
  ): void;
  mlaAttention(
    kDtype: number,
    numBlocks: number,
    blockSize: number,
    headDim: number,
    k: Uint8Array,
    kScale: number,
    q: Float32Array,
    out: Float32Array,
    totalRows: number,
    numHeads: number,
    scale: number,
    latentDim: number,
    seqMeta: Int32Array,
    blockTables: Int32Array,
  ): void;
  /** A MoE layer's experts, registered once: per projection a dtype code and one weight data array (or null) per expert. */
  moeLayer(
    hidden: number,
    inter: number,
    gateDtype: number,
    upDtype: number,
    downDtype: number,
    gate: readonly (Uint8Array | null)[],
    up: readonly (Uint8Array | null)[],
    down: readonly (Uint8Array | null)[],
    /** Per-expert biases (GPT-OSS), each list one Float32Array or null per expert; absent: none. */
    gateBias?: readonly (Float32Array | null)[],
    upBias?: readonly (Float32Array | null)[],
    downBias?: readonly (Float32Array | null)[],
    /** GPT-OSS's clamped SwiGLU; absent: silu(g) · u. */
    alpha?: number,
    limit?: number,
  ): MoeLayerHandle;
  moe(layer: MoeLayerHandle, x: Float32Array, n: number, ids: Int32Array, weights: Float32Array, k: number, out: Float32Array): void;
  /** seqs: (qStart, qLen, slot) triples (native/gated_delta.cc). */
  causalConv1d(
    x: Float32Array,
    rows: number,
    channels: number,
    kernel: number,
    weight: Float32Array,
    seqs: Int32Array,
    state: Float32Array,
    numSlots: number,
    out: Float32Array,
    bias?: Float32Array,
  ): void;
  /** seqs: (qStart, qLen, slot) triples; a, d, dtBias per head (native/ssd_scan.cc). */
  ssdScan(
    x: Float32Array,
    dt: Float32Array,
    b: Float32Array,
    c: Float32Array,
    rows: number,
    seqs: Int32Array,
    numHeads: number,
    headDim: number,
    stateSize: number,
    nGroups: number,
    a: Float32Array,
    d: Float32Array,
    dtBias: Float32Array,
    dtMin: number,
    dtMax: number,
    state: Float32Array,
    numSlots: number,
    out: Float32Array,
    chunkMin: number,
  ): void;
  gatedDeltaRule(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    g: Float32Array,
    beta: Float32Array,
    rows: number,
    seqs: Int32Array,
    numKHeads: number,
    numVHeads: number,
    kDim: number,
    vDim: number,
    l2norm: boolean,
    state: Float32Array,
    numSlots: number,
    out: Float32Array,
    chunkMin: number,
  ): void;
  info(): NativeInfo;
  setCpuPath(path: CpuPath): void;
  setNumThreads(n: number): void;
  setSpinMicros(us: number): void;
  /** The C++ traits rows, each at its code (native/dtypes.cc). */
  dtypeTraits(): NativeDTypeTraits;
  /** native/bandwidth.cc: the kernel threads stream a `bytes` buffer `passes` times; the best pass. */
  measureReadBandwidth(bytes: number, passes: number): NativeReadBandwidth;
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

export interface NativeReadBandwidth {
  gbPerS: number;
  bytes: number;
  passes: number;
  threads: number;
  path: string;
}

/** Memory read bandwidth as svc's kernel threads stream it (the benches' roofline). Blocks the caller. */
export function measureNativeReadBandwidth(bytes: number, passes: number): NativeReadBandwidth {
  return loadAddon().measureReadBandwidth(bytes, passes);
}

/**
 * Index of the first largest value of x; NaN never wins, and 0 when no value is above -Infinity
 * (greedy sampling's argmax, native/norm_rope_act.cc). Microseconds over a 150k-entry vocabulary row.
 */
export function nativeArgmax(x: Float32Array): number {
  checkKind('argmax', 'x', x, Float32Array);
  return loadAddon().argmax(x, x.length);
}

/** Force a kernel path (tests of the fallbacks); throws when the CPU lacks it. */
export function setCpuPath(path: CpuPath): void {
  loadAddon().setCpuPath(path);
}

/**
 * Which form the recurrences of linear-attention / SSM layers (gatedDeltaRule, ssdScan) run in: a
 * sequence bringing at least `minTokens` rows to one call runs the chunked form (64-token blocks as
 * small GEMMs), a shorter one (decode, short pieces) the token-by-token recurrence. Both give the
 * same results to float rounding. 0: always chunked; Infinity: always recurrent (tests and benches).
 */
export const DEFAULT_CHUNKED_MIN_TOKENS = 16;
let chunkedMinTokens = DEFAULT_CHUNKED_MIN_TOKENS;
export function setChunkedRecurrence(minTokens: number): void {
  if (!(minTokens >= 0)) throw new RangeError(`setChunkedRecurrence: minTokens ${minTokens} must be >= 0`);
  chunkedMinTokens = minTokens;
}
/** The addon's chunkMin argument: a whole count the addon accepts. */
const chunkMinArg = (): number => Math.min(Math.floor(chunkedMinTokens), 2 ** 31 - 1);

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

/** An MLA latent layer: one KV head, K side only (checkLatentLayer's rules, then K's bytes and alignment). */
function checkLatent(op: string, layer: KvLayer, latentDim?: number): void {
  checkCount(op, 'layer.numBlocks', layer.numBlocks);
  checkCount(op, 'layer.blockSize', layer.blockSize, 1);
  checkCount(op, 'layer.headDim', layer.headDim, 1);
  const traits = kvTraits(op, 'k', layer.kDtype);
  if (layer.numKvHeads !== 1) fail(op, `an MLA layer has one KV head, not ${layer.numKvHeads}`);
  if (traits.rotated) fail(op, `KV dtype ${layer.kDtype} (rotated rows) is not supported for MLA layers`);
  if (latentDim !== undefined && !(Number.isInteger(latentDim) && latentDim >= 1 && latentDim <= layer.headDim))
    fail(op, `latentDim ${latentDim} must be an integer from 1 to headDim ${layer.headDim}`);
  checkSide(op, 'k', traits, layer.kDtype, layer.k, layer.kScale, layer.numBlocks * layer.blockSize, layer.headDim);
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

// ---- moe ----

/** A layer's experts as the addon holds them (native/moe.cc): raw pointers to each expert's weights. */
export interface MoeLayerHandle {
  readonly __moeLayer: never;
}

/**
 * What a MoeExperts object was registered as: the handle, and the weights it points into (held
 * here, so their buffers outlive the handle's pointers).
 */
interface MoeLayerEntry {
  readonly handle: MoeLayerHandle;
  readonly hidden: number;
  readonly weights: readonly (WeightMatrix | null)[][];
  readonly data: readonly (Uint8Array | null)[][];
  /** The biases the handle points into (kept alive with it). */
  readonly bias: MoeExperts['bias'];
}

const moeLayers = new WeakMap<MoeExperts, MoeLayerEntry>();
const PROJECTIONS = ['gate', 'up', 'down'] as const;

/** True while `experts` still lists the weights `entry` was made from (a cheap identity check per call). */
function sameExperts(experts: MoeExperts, entry: MoeLayerEntry): boolean {
  for (let p = 0; p < 3; p++) {
    const list = experts[PROJECTIONS[p]],
      was = entry.weights[p],
      data = entry.data[p];
    if (list.length !== was.length) return false;
    for (let e = 0; e < list.length; e++) {
      const w = list[e];
      if (w !== was[e] || (w !== null && w.data !== data[e])) return false;
    }
  }
  return true;
}

/**
 * The addon's handle for a layer's experts, made on first use and cached on the MoeExperts object.
 * Checks every held expert: gate and up [inter, hidden], down [hidden, inter], one dtype (and
 * layout: packed or not) per projection across the layer.
 */
function moeLayer(experts: MoeExperts): MoeLayerEntry {
  const cached = moeLayers.get(experts);
  if (cached !== undefined && sameExperts(experts, cached)) return cached;
  const op = 'moe';
  const lists = PROJECTIONS.map((p) => {
    const list = experts[p] as unknown;
    if (!Array.isArray(list)) fail(op, `experts.${p} must be an array`);
    return list as readonly (WeightMatrix | null)[];
  });
  const numExperts = lists[0].length;
  if (lists[1].length !== numExperts || lists[2].length !== numExperts)
    fail(op, `experts.gate, .up and .down list ${numExperts}, ${lists[1].length} and ${lists[2].length} experts`);
  const codes: (number | null)[] = [null, null, null];
  const dtypes: (string | null)[] = [null, null, null];
  let hidden = 0,
    inter = 0;
  // What the addon gets: an expert missing any of its projections is not held (the reference skips it).
  const held: (Uint8Array | null)[][] = [[], [], []];
  for (let e = 0; e < numExperts; e++) {
    const ws = lists.map((l) => l[e] ?? null);
    const isHeld = ws.every((w) => w !== null);
    for (let p = 0; p < 3; p++) {
      const w = isHeld ? ws[p] : null;
      held[p].push(w === null ? null : w.data);
      if (w === null) continue;
      const name = `experts.${PROJECTIONS[p]}[${e}]`;
      const code = checkWeight(`${op}: ${name}`, w);
      const label = `${w.dtype}${isPackedWeight(w) ? ' (packed)' : ''}`;
      if (codes[p] === null) {
        codes[p] = code;
        dtypes[p] = label;
      } else if (code !== codes[p]) {
        fail(op, `${name} is ${label}, the layer's other ${PROJECTIONS[p]} weights ${dtypes[p]}`);
      }
    }
    if (!isHeld) continue;
    const [gate, up, down] = ws as WeightMatrix[];
    if (hidden === 0) {
      hidden = gate.cols;
      inter = gate.rows;
    }
    for (const [p, w, rows, cols] of [
      ['gate', gate, inter, hidden],
      ['up', up, inter, hidden],
      ['down', down, hidden, inter],
    ] as const) {
      if (w.rows !== rows || w.cols !== cols)
        fail(op, `experts.${p}[${e}] is [${w.rows}, ${w.cols}], the layer's ${p} weights are [${rows}, ${cols}]`);
    }
  }
  if (hidden === 0) throw new RangeError(`${op}: no expert held`);
  const bias = experts.bias;
  if (bias) {
    for (const [p, len] of [
      ['gate', inter],
      ['up', inter],
      ['down', hidden],
    ] as const) {
      const list = bias[p];
      if (list.length !== numExperts) fail(op, `experts.bias.${p} lists ${list.length} experts, not ${numExperts}`);
      list.forEach((b, e) => {
        if (b === null) return;
        checkKind(op, `experts.bias.${p}[${e}]`, b, Float32Array);
        checkLength(op, `experts.bias.${p}[${e}]`, b, len);
      });
    }
  }
  const act = experts.activation;
  if (act && (act.kind !== 'clamped-swiglu' || !(act.alpha > 0) || !Number.isFinite(act.alpha) || !(act.limit > 0)))
    fail(op, `experts.activation must be clamped-swiglu with alpha > 0 and limit > 0`);
  const addon = loadAddon();
  const handle =
    bias || act
      ? addon.moeLayer(
          hidden,
          inter,
          codes[0]!,
          codes[1]!,
          codes[2]!,
          held[0],
          held[1],
          held[2],
          bias?.gate,
          bias?.up,
          bias?.down,
          act?.alpha,
          act?.limit,
        )
      : addon.moeLayer(hidden, inter, codes[0]!, codes[1]!, codes[2]!, held[0], held[1], held[2]);
  const entry: MoeLayerEntry = {
    bias,
    handle,
    hidden,
    weights: lists.map((l) => l.slice()),
    data: lists.map((l) => l.map((w) => w?.data ?? null)),
  };
  moeLayers.set(experts, entry);
  return entry;
}

/** One native call per layer step (native/moe.cc): picks grouped per expert, gate/up, silu·up, down and the weighted sum. */
function moe(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number, out: Float32Array): void {
  const { handle, hidden } = moeLayer(experts);
  checkCount('moe', 'n', n);
  checkCount('moe', 'k', k, 1);
  checkKind('moe', 'x', x, Float32Array);
  checkKind('moe', 'ids', ids, Int32Array);
  checkKind('moe', 'weights', weights, Float32Array);
  checkKind('moe', 'out', out, Float32Array);
  checkLength('moe', 'x', x, n * hidden);
  checkLength('moe', 'ids', ids, n * k);
  checkLength('moe', 'weights', weights, n * k);
  checkLength('moe', 'out', out, n * hidden);
  if (overlaps(x, out)) fail('moe', 'out must not overlap x');
  if (overlaps(ids, out) || overlaps(weights, out)) fail('moe', 'out must not overlap ids or weights');
  // The addon checks the expert ids (a RangeError naming the first one outside the layer).
  loadAddon().moe(handle, x, n, ids, weights, k, out);
}

/** Recurrent ops' sequences as the addon takes them: (qStart, qLen, slot) triples. */
function marshalRecurrentSeqs(seqs: readonly RecurrentSeq[]): Int32Array {
  const out = new Int32Array(seqs.length * 3);
  seqs.forEach((s, i) => out.set([s.qStart, s.qLen, s.slot], i * 3));
  return out;
}

function causalConv1d(
  x: Float32Array,
  channels: number,
  kernel: number,
  weight: Float32Array,
  seqs: readonly RecurrentSeq[],
  state: Float32Array,
  out: Float32Array,
  bias?: Float32Array,
): void {
  const op = 'causalConv1d';
  checkCount(op, 'channels', channels, 1);
  checkCount(op, 'kernel', kernel, 1);
  for (const [name, arr] of [
    ['x', x],
    ['weight', weight],
    ['state', state],
    ['out', out],
  ] as const)
    checkKind(op, name, arr, Float32Array);
  checkLength(op, 'weight', weight, kernel * channels);
  if (bias) {
    checkKind(op, 'bias', bias, Float32Array);
    checkLength(op, 'bias', bias, channels);
  }
  if (overlaps(x, out)) fail(op, 'out must not overlap x');
  const rows = Math.floor(Math.min(x.length, out.length) / channels);
  const slotSize = (kernel - 1) * channels;
  const numSlots = slotSize === 0 ? 2 ** 31 - 1 : Math.floor(state.length / slotSize);
  loadAddon().causalConv1d(x, rows, channels, kernel, weight, marshalRecurrentSeqs(seqs), state, numSlots, out, bias);
}

function ssdScan(
  x: Float32Array,
  dt: Float32Array,
  b: Float32Array,
  c: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: SsdParams,
  state: Float32Array,
  out: Float32Array,
): void {
  const op = 'ssdScan';
  const { numHeads, headDim, stateSize, nGroups } = params;
  ssdHeadsPerGroup(op, params);
  for (const [name, arr] of [
    ['x', x],
    ['dt', dt],
    ['b', b],
    ['c', c],
    ['state', state],
    ['out', out],
  ] as const) {
    checkKind(op, name, arr, Float32Array);
    if (name !== 'out' && overlaps(arr, out)) fail(op, `out must not overlap ${name}`);
  }
  const rows = Math.floor(dt.length / numHeads);
  const numSlots = Math.floor(state.length / (numHeads * headDim * stateSize));
  loadAddon().ssdScan(
    x,
    dt,
    b,
    c,
    rows,
    marshalRecurrentSeqs(seqs),
    numHeads,
    headDim,
    stateSize,
    nGroups,
    params.a,
    params.d,
    params.dtBias,
    params.dtMin,
    params.dtMax,
    state,
    numSlots,
    out,
    chunkMinArg(),
  );
}

function gatedDeltaRule(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  seqs: readonly RecurrentSeq[],
  params: GatedDeltaParams,
  state: Float32Array,
  out: Float32Array,
): void {
  const op = 'gatedDeltaRule';
  const { numKHeads, numVHeads, kDim, vDim, l2norm } = params;
  for (const [name, n] of [
    ['numKHeads', numKHeads],
    ['numVHeads', numVHeads],
    ['kDim', kDim],
    ['vDim', vDim],
  ] as const)
    checkCount(op, name, n, 1);
  if (numVHeads % numKHeads !== 0) fail(op, `numVHeads ${numVHeads} is not a multiple of numKHeads ${numKHeads}`);
  for (const [name, arr] of [
    ['q', q],
    ['k', k],
    ['v', v],
    ['g', g],
    ['beta', beta],
    ['state', state],
    ['out', out],
  ] as const)
    checkKind(op, name, arr, Float32Array);
  for (const [name, arr] of [
    ['q', q],
    ['k', k],
    ['v', v],
    ['g', g],
    ['beta', beta],
    ['state', state],
  ] as const)
    if (overlaps(arr, out)) fail(op, `out must not overlap ${name}`);
  const rows = Math.floor(Math.min(g.length, beta.length) / numVHeads);
  const numSlots = Math.floor(state.length / (numVHeads * kDim * vDim));
  loadAddon().gatedDeltaRule(
    q,
    k,
    v,
    g,
    beta,
    rows,
    marshalRecurrentSeqs(seqs),
    numKHeads,
    numVHeads,
    kDim,
    vDim,
    l2norm,
    state,
    numSlots,
    out,
    chunkMinArg(),
  );
}

/** The addon's code for each GELU kind (native/norm_rope_act.cc Gelu). */
const GELU_CODES: Record<GeluKind, number> = { erf: 0, tanh: 1, quick: 2 };

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

  allocateLarge: (bytes) => new Uint8Array(loadAddon().allocHugePages(bytes)),

  packedLayout: {
    // The version, and which packed layout each dtype goes to (a renumbered or re-routed dtype is another format).
    format: () => {
      const addon = loadAddon();
      const { weights } = addon.dtypeTraits();
      const routes = weights.filter((t) => t.packed >= 0).map((t) => `${t.name}>${weights[t.packed]?.name ?? t.packed}`);
      return `svc-packed/${addon.packFormatVersion}/${PACK_ROWS}/${routes.join(',')}`;
    },
    isPacked: (w) => packedData.has(w.data),
    packedLength: (dtype, rows, cols) => {
      const traits = WEIGHT_DTYPES[dtype];
      if (traits.packedCode === null || rows === 0) return null;
      return loadAddon().packedBytes(traits.code, rows, cols) ?? null;
    },
    adopt(dtype, rows, cols, data) {
      const traits = WEIGHT_DTYPES[dtype];
      const need = this.packedLength(dtype, rows, cols);
      if (need === null || traits.packedCode === null) fail('adopt', `${dtype} has no packed layout`);
      if (data.byteLength !== need) fail('adopt', `packed ${dtype} [${rows}, ${cols}] is ${need} bytes, data has ${data.byteLength}`);
      if (data.byteOffset % 64 !== 0) fail('adopt', 'packed data must be 64-byte aligned');
      packedData.set(data, traits.packedCode);
      return { dtype, rows, cols, data };
    },
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

  matmulShared(x, n, parts) {
    checkCount('matmulShared', 'n', n);
    checkKind('matmulShared', 'x', x, Float32Array);
    if (parts.length === 0) return;
    const cols = parts[0]!.w.cols;
    checkLength('matmulShared', 'x', x, n * cols);
    const args: (number | Uint8Array | Float32Array | undefined)[] = [];
    for (const { w, y, bias } of parts) {
      const code = checkWeight('matmulShared', w);
      if (w.cols !== cols) fail('matmulShared', `every weight must have x's width ${cols}, got ${w.cols}`);
      checkKind('matmulShared', 'y', y, Float32Array);
      checkLength('matmulShared', 'y', y, n * w.rows);
      if (overlaps(x, y)) fail('matmulShared', 'y must not overlap x');
      if (bias !== undefined) {
        checkKind('matmulShared', 'bias', bias, Float32Array);
        checkLength('matmulShared', 'bias', bias, w.rows);
      }
      args.push(code, w.rows, w.data, y, bias);
    }
    for (let i = 0; i < parts.length; i++)
      for (let j = 0; j < i; j++) if (overlaps(parts[i]!.y, parts[j]!.y)) fail('matmulShared', 'outputs must not overlap each other');
    loadAddon().matmulShared(x, n, cols, ...args);
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

  rope(x, n, numHeads, headDim, positions, theta, style: RopeStyle, freqs?: RopeFrequencies) {
    checkCount('rope', 'n', n);
    checkCount('rope', 'numHeads', numHeads, 1);
    checkCount('rope', 'headDim', headDim, 2);
    if (headDim % 2 !== 0) fail('rope', `headDim must be even, got ${headDim}`);
    if (style !== 'neox' && style !== 'normal') fail('rope', `style must be 'neox' or 'normal', got ${String(style)}`);
    checkKind('rope', 'x', x, Float32Array);
    checkKind('rope', 'positions', positions, Int32Array);
    checkLength('rope', 'x', x, n * numHeads * headDim);
    checkLength('rope', 'positions', positions, n);
    if (freqs === undefined) {
      loadAddon().rope(x, n, numHeads, headDim, positions, theta, style === 'neox');
      return;
    }
    const rot = freqs.rotaryDim ?? headDim;
    if (!Number.isInteger(rot) || rot < 2 || rot % 2 !== 0 || rot > headDim) {
      fail('rope', `rotaryDim must be an even number from 2 to headDim ${headDim}, got ${rot}`);
    }
    const invFreq = freqs.invFreq ?? null;
    if (invFreq !== null) {
      checkKind('rope', 'invFreq', invFreq, Float32Array);
      if (invFreq.length !== rot / 2) fail('rope', `invFreq must hold rotaryDim / 2 = ${rot / 2} values, got ${invFreq.length}`);
    }
    const scale = freqs.scale ?? 1;
    if (!Number.isFinite(scale)) fail('rope', `scale must be finite, got ${scale}`);
    loadAddon().rope(x, n, numHeads, headDim, positions, theta, style === 'neox', rot, invFreq, scale);
  },

  ropeMulti(x, n, numHeads, headDim, positions, sections, theta) {
    checkCount('ropeMulti', 'n', n);
    checkCount('ropeMulti', 'numHeads', numHeads, 1);
    checkCount('ropeMulti', 'headDim', headDim, 2);
    if (headDim % 2 !== 0) fail('ropeMulti', `headDim must be even, got ${headDim}`);
    checkKind('ropeMulti', 'x', x, Float32Array);
    checkKind('ropeMulti', 'positions', positions, Int32Array);
    checkKind('ropeMulti', 'sections', sections, Int32Array);
    let sum = 0;
    for (const len of sections) {
      if (len < 0) fail('ropeMulti', `sections must not be negative, got [${sections.join(', ')}]`);
      sum += len;
    }
    if (sum !== headDim / 2) fail('ropeMulti', `sections [${sections.join(', ')}] sum to ${sum}, not headDim / 2 = ${headDim / 2}`);
    checkLength('ropeMulti', 'x', x, n * numHeads * headDim);
    checkLength('ropeMulti', 'positions', positions, sections.length * n);
    loadAddon().ropeMulti(x, n, numHeads, headDim, positions, sections, theta);
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

  layerNorm(x, rows, dim, weight, bias, eps, out) {
    checkCount('layerNorm', 'rows', rows);
    checkCount('layerNorm', 'dim', dim, 1);
    for (const [name, arr, len] of [
      ['x', x, rows * dim],
      ['weight', weight, dim],
      ['bias', bias, dim],
      ['out', out, rows * dim],
    ] as const) {
      checkKind('layerNorm', name, arr, Float32Array);
      checkLength('layerNorm', name, arr, len);
    }
    loadAddon().layerNorm(x, rows, dim, weight, bias, eps, out);
  },

  gelu(x, out, len, kind) {
    checkCount('gelu', 'len', len);
    const code = GELU_CODES[kind] as number | undefined;
    if (code === undefined) fail('gelu', `kind must be 'erf', 'tanh' or 'quick', got ${String(kind)}`);
    checkKind('gelu', 'x', x, Float32Array);
    checkKind('gelu', 'out', out, Float32Array);
    checkLength('gelu', 'x', x, len);
    checkLength('gelu', 'out', out, len);
    loadAddon().gelu(x, out, len, code);
  },

  geluMul(gate, up, out, len, kind) {
    checkCount('geluMul', 'len', len);
    const code = GELU_CODES[kind] as number | undefined;
    if (code === undefined) fail('geluMul', `kind must be 'erf', 'tanh' or 'quick', got ${String(kind)}`);
    for (const [name, arr] of [
      ['gate', gate],
      ['up', up],
      ['out', out],
    ] as const) {
      checkKind('geluMul', name, arr, Float32Array);
      checkLength('geluMul', name, arr, len);
    }
    // The GELU is written into out before the product reads up.
    if (overlaps(out, up)) fail('geluMul', 'out must not overlap up');
    loadAddon().geluMul(gate, up, out, len, code);
  },

  softcap(x, out, len, cap) {
    checkCount('softcap', 'len', len);
    if (!(cap > 0) || !Number.isFinite(cap)) fail('softcap', `cap must be positive and finite, got ${cap}`);
    checkKind('softcap', 'x', x, Float32Array);
    checkKind('softcap', 'out', out, Float32Array);
    checkLength('softcap', 'x', x, len);
    checkLength('softcap', 'out', out, len);
    loadAddon().softcap(x, out, len, cap);
  },

  bidirectionalAttention(q, nq, k, v, nk, numHeads, headDim, scale, out) {
    const op = 'bidirectionalAttention';
    checkCount(op, 'nq', nq);
    checkCount(op, 'nk', nk, 1);
    checkCount(op, 'numHeads', numHeads, 1);
    checkCount(op, 'headDim', headDim, 1);
    if (!Number.isFinite(scale)) fail(op, `scale must be finite, got ${scale}`);
    const width = numHeads * headDim;
    for (const [name, arr, len] of [
      ['q', q, nq * width],
      ['k', k, nk * width],
      ['v', v, nk * width],
      ['out', out, nq * width],
    ] as const) {
      checkKind(op, name, arr, Float32Array);
      checkLength(op, name, arr, len);
    }
    // Tasks of one head read all its keys and values while others write their rows of out.
    if (overlaps(out, k) || overlaps(out, v)) fail(op, 'out must not overlap k or v');
    loadAddon().bidirectionalAttention(q, nq, k, v, nk, numHeads, headDim, scale, out);
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
    const softcap = params.softcap ?? 0;
    checkCount('attention', 'numHeads', numHeads, 1);
    if (!(softcap >= 0) || !Number.isFinite(softcap)) fail('attention', `softcap must be finite and >= 0, got ${softcap}`);
    if (numHeads % layer.numKvHeads !== 0) fail('attention', `numHeads ${numHeads} is not a multiple of numKvHeads ${layer.numKvHeads}`);
    if (!Number.isFinite(scale)) fail('attention', `scale must be finite, got ${scale}`);
    if (slidingWindow !== null) checkCount('attention', 'slidingWindow', slidingWindow, 1);
    checkKind('attention', 'q', q, Float32Array);
    checkKind('attention', 'out', out, Float32Array);
    const sinks = params.sinks;
    if (sinks !== undefined) {
      checkKind('attention', 'sinks', sinks, Float32Array);
      checkLength('attention', 'sinks', sinks, numHeads);
    }
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
      softcap,
      sinks,
    );
  },

  storeLatentKv(layer, latent, n, slots) {
    checkLatent('storeLatentKv', layer);
    checkCount('storeLatentKv', 'n', n);
    checkKind('storeLatentKv', 'latent', latent, Float32Array);
    checkKind('storeLatentKv', 'slots', slots, Int32Array);
    checkLength('storeLatentKv', 'latent', latent, n * layer.headDim);
    checkLength('storeLatentKv', 'slots', slots, n);
    const { kDtype, numBlocks, blockSize, headDim, k, kScale } = layer;
    loadAddon().storeLatentKv(KV_DTYPES[kDtype].code, numBlocks, blockSize, headDim, k, kScale, latent, n, slots);
  },

  mlaAttention(q, layer, seqs, params: MlaAttentionParams, out) {
    const { numHeads, scale, latentDim } = params;
    checkLatent('mlaAttention', layer, latentDim);
    checkCount('mlaAttention', 'numHeads', numHeads, 1);
    if (!Number.isFinite(scale)) fail('mlaAttention', `scale must be finite, got ${scale}`);
    checkKind('mlaAttention', 'q', q, Float32Array);
    checkKind('mlaAttention', 'out', out, Float32Array);
    if (overlaps(q, out)) fail('mlaAttention', 'out must not overlap q');
    const totalRows = Math.floor(Math.min(q.length / (numHeads * layer.headDim), out.length / (numHeads * latentDim)));
    const { meta, tables } = marshalSeqs(seqs);
    const { kDtype, numBlocks, blockSize, headDim, k, kScale } = layer;
    loadAddon().mlaAttention(
      KV_DTYPES[kDtype].code,
      numBlocks,
      blockSize,
      headDim,
      k,
      kScale,
      q,
      out,
      totalRows,
      numHeads,
      scale,
      latentDim,
      meta,
      tables,
    );
  },

  moe,
  causalConv1d,
  gatedDeltaRule,
  ssdScan,
};
