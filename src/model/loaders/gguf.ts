// GGUF checkpoints: one file holding metadata and ggml tensors. Tensors come out under Hugging Face
// names, in row-major shape, with llama.cpp's Q/K row interleave undone so every architecture sees
// Hugging Face layout (and rotates with neox-style RoPE). Stacked expert tensors (ffn_*_exps) stay
// whole, [experts, rows, cols]: the model slices out the experts it holds (expert-weights.ts). Names and
// the converter's per-family transformations (Gemma's norm + 1, Mamba's A = −exp(A_log), Qwen3.5's
// V-head order, …) are gguf-names.ts's, and so are tensors rebuilt from several GGUF ones (DeepSeek's
// kv_b_proj, GPT-OSS's experts); a family's own metadata keys are its module's ggufConfig. ggml MXFP4 tensors (GPT-OSS's
// experts) are decoded at load to bf16 (exact), as the safetensors MXFP4 path does (mxfp4.ts).
import type { Checkpoint, DType, LoadProgress, Tensor } from '../types.js';
import { architectureNamed } from '../architectures/index.js';
import { configFromGguf } from '../model-config.js';
import { ALL_DTYPES, WEIGHT_DTYPES, bytesPerRow, dequantize } from '../../kernels/dtypes.js';
import { GGML_TYPE, readGgufHeader, type GgufTensorInfo } from './gguf-header.js';
import { mapFile } from './file-bytes.js';
import { DerivedBytes, MappedResidency } from './mapped-residency.js';
import { ggufJoins, ggufTensorFix, hfNameOf } from './gguf-names.js';
import { dequantizeGgmlMxfp4, MXFP4_BLOCK_BYTES, MXFP4_BLOCK_VALUES } from './mxfp4.js';
import { f32ToBf16 } from '../../kernels/dequant.js';
import { PackedWeightCache, type CacheLog, type PackedCacheSettings } from './packed-cache.js';

export { hfNameOf } from './gguf-names.js';

/** ggml type ids → the weight dtypes (each dtype's row in WEIGHT_DTYPES names its ggml type). */
const GGML_TO_DTYPE = new Map<number, DType>(ALL_DTYPES.map((d) => [WEIGHT_DTYPES[d].ggmlType, d]));

const GGML_TYPE_NAMES = new Map<number, string>(Object.entries(GGML_TYPE).map(([k, v]) => [v, k]));
const GGML_SUPPORTED = ALL_DTYPES.map((d) => GGML_TYPE_NAMES.get(WEIGHT_DTYPES[d].ggmlType) ?? d).join(', ');

/** The packed-weights cache a fast load uses (packed-cache.ts), and where its lines go. */
export interface PackedCacheUse {
  settings: PackedCacheSettings;
  log: CacheLog;
}

/**
 * Maps the file; tensors are views of the mapping (Q/K weights of interleaved architectures are
 * copies made when first read). The checkpoint's residency releases or maps their pages as the
 * model takes them (mapped-residency.ts): fastLoad is the flat-memory path, else plain mmap. With
 * fastLoad and `packedCache`, the checkpoint carries the file's packed-weights cache: packed
 * weights come from its file when it is valid (and nothing is read ahead), else are packed and kept.
 */
export function loadGgufCheckpoint(
  path: string,
  fastLoad: boolean,
  onProgress?: (p: LoadProgress) => void,
  packedCache?: PackedCacheUse,
): Checkpoint {
  // The tokenizer's arrays are left out: the model does not need them (the tokenizer reads its own).
  const header = readGgufHeader(path, { skipLargeArrays: true });
  const metadata = header.metadata;
  const infos = new Map(header.tensors.map((t) => [t.name, t]));
  // Validate every tensor against the file size before touching (or mapping) the data.
  for (const info of header.tensors) {
    const end = info.offset + storedBytes(info, path);
    if (end > header.fileSize) {
      throw new Error(`${path}: tensor ${info.name} data lies beyond end of file (ends at byte ${end}, file has ${header.fileSize})`);
    }
  }

  const cache = fastLoad && packedCache ? PackedWeightCache.open(path, packedCache.settings, packedCache.log) : undefined;
  const file = mapFile(path, fastLoad);
  const viewOf = (info: GgufTensorInfo): Uint8Array => file.view(info.offset, storedBytes(info, path));
  const config = configFromGguf(metadata, {
    hasOutputWeight: infos.has('output.weight'),
    embeddingRows: infos.get('token_embd.weight')?.dims[1],
    routerLayers: new Set(header.tensors.flatMap((t) => /^blk\.(\d+)\.ffn_gate_inp\.weight$/.exec(t.name)?.[1] ?? []).map(Number)),
    tensorNames: infos.keys(),
    // Small tensors the config reads (Phi-3's LongRoPE factors), decoded to f32.
    tensorValues: (name) => {
      const info = infos.get(name);
      return info ? f32Values(info, viewOf(info), path) : undefined;
    },
    source: path,
  });
  const arch = metadata['general.architecture'] as string;
  // llama.cpp's converter interleaved the Q/K rows of some architectures (its "normal" RoPE).
  const qkPermuted = architectureNamed(config.architecture)?.module.ggufQkPermuted ?? false;
  const residency = new MappedResidency(file, fastLoad, onProgress, !cache?.usable);
  const tensors = new Map<string, Tensor>();
  let first = Infinity;
  // Tensors rebuilt from several GGUF ones (gguf-names.ts ggufJoins): bf16 when every part is MXFP4
  // (exact), else f32. Their residency entry is the first part's bytes.
  const consumed = new Set<string>();
  for (const join of ggufJoins(arch, new Map(header.tensors.map((t) => [t.name, [...t.dims].reverse()])))) {
    const parts = join.parts.map((n) => infos.get(n) as GgufTensorInfo);
    for (const p of parts) consumed.add(p.name);
    const bf16 = parts.every((p) => p.ggmlType === GGML_TYPE.MXFP4);
    const derived = new DerivedBytes(() => {
      const values = join.values(parts.map((p) => f32Values(p, viewOf(p), path)));
      return bf16 ? bf16Bytes(values) : new Uint8Array(values.buffer);
    });
    residency.add(join.hfName, parts[0].offset, storedBytes(parts[0], path), derived);
    first = Math.min(first, ...parts.map((p) => p.offset));
    tensors.set(join.hfName, derivedTensor(join.hfName, bf16 ? 'bf16' : 'f32', join.shape, derived));
  }
  for (const info of header.tensors) {
    const name = consumed.has(info.name) ? null : hfNameOf(info.name, arch);
    if (!name) continue;
    if (info.ggmlType === GGML_TYPE.MXFP4) {
      // Decoded to bf16 (exact): svc has no MXFP4 kernels.
      const view = viewOf(info);
      const derived = new DerivedBytes(() => bf16Bytes(f32Values(info, view, path)));
      residency.add(name, info.offset, view.length, derived);
      first = Math.min(first, info.offset);
      tensors.set(name, derivedTensor(name, 'bf16', [...info.dims].reverse(), derived));
      continue;
    }
    const dtype = dtypeOf(info, path);
    const stored = [...info.dims].reverse();
    const length = tensorBytes(info, dtype, path);
    const view = file.view(info.offset, length);
    first = Math.min(first, info.offset);
    // What the converter did to the tensor beyond renaming it, undone (gguf-names.ts).
    const fix = ggufTensorFix(arch, name, stored, config);
    const shape = fix?.shape ?? stored;
    const transform = fix?.values;
    if (transform) {
      const derived = new DerivedBytes(() => new Uint8Array(transform(f32Values(info, view, path)).buffer));
      residency.add(name, info.offset, length, derived);
      tensors.set(name, derivedTensor(name, 'f32', shape, derived));
      continue;
    }
    const order = fix?.rows;
    if (order) {
      if (order.length !== stored[0]) throw new Error(`${path}: tensor ${info.name}: ${stored[0]} rows, expected ${order.length}`);
      const derived = new DerivedBytes(() => gatherRows(view, order, length / order.length));
      residency.add(name, info.offset, length, derived);
      tensors.set(name, derivedTensor(name, dtype, shape, derived));
      continue;
    }
    const heads = qkPermuted
      ? /\.attn_q\.(weight|bias)$/.test(info.name)
        ? config.numHeads
        : /\.attn_k\.(weight|bias)$/.test(info.name)
          ? config.numKvHeads
          : 0
      : 0;
    if (heads === 0) {
      residency.add(name, info.offset, length);
      tensors.set(name, { name, dtype, shape, data: view });
      continue;
    }
    // A weight moves whole rows; a 1-D bias moves single elements. Made when the model reads it,
    // dropped once it has its own weight, so one copy at a time is alive, not all of them.
    const derived = new DerivedBytes(() => unpermuteRows(view, shape[0], heads, length / shape[0]));
    residency.add(name, info.offset, length, derived);
    tensors.set(name, derivedTensor(name, dtype, shape, derived));
  }

  const embed = tensors.get('model.embed_tokens.weight');
  if (!embed) throw new Error(`${path}: no token_embd.weight tensor`);
  if (!tensors.has('lm_head.weight')) {
    const info = infos.get('token_embd.weight');
    if (info) residency.add('lm_head.weight', info.offset, embed.data.byteLength);
    tensors.set('lm_head.weight', { ...embed, name: 'lm_head.weight' });
  }
  if (first < Infinity) residency.start(first);
  return { source: path, format: 'gguf', config, tensors, ggufMetadata: metadata, residency, ...(cache ? { packedCache: cache } : {}) };
}

/** A tensor's values decoded to f32 (a copy). */
function f32Values(info: GgufTensorInfo, view: Uint8Array, path: string): Float32Array {
  if (info.ggmlType === GGML_TYPE.MXFP4)
    return dequantizeGgmlMxfp4(
      view,
      info.dims.reduce((a, b) => a * b, 1),
    );
  const dtype = dtypeOf(info, path);
  const cols = info.dims[0] ?? 1;
  const rows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  return dequantize(dtype, view, rows, cols);
}

/** A tensor whose data getter hands out `derived`'s copy (made on first read). */
function derivedTensor(name: string, dtype: DType, shape: number[], derived: DerivedBytes): Tensor {
  const tensor = { name, dtype, shape } as Tensor;
  Object.defineProperty(tensor, 'data', { enumerable: true, get: () => derived.get() });
  return tensor;
}

/** f32 values as bf16 bytes (exact for MXFP4's values). */
function bf16Bytes(values: Float32Array): Uint8Array {
  const bits = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) bits[i] = f32ToBf16(values[i]);
  return new Uint8Array(bits.buffer);
}

/** Bytes of a tensor's data in the file (weight dtypes, and MXFP4, which is decoded at load). */
function storedBytes(info: GgufTensorInfo, path: string): number {
  if (info.ggmlType !== GGML_TYPE.MXFP4) return tensorBytes(info, dtypeOf(info, path), path);
  const count = info.dims.reduce((a, b) => a * b, 1);
  if ((info.dims[0] ?? 0) % MXFP4_BLOCK_VALUES !== 0)
    throw new Error(`${path}: MXFP4 tensor ${info.name}: row of ${info.dims[0]} is not whole blocks of ${MXFP4_BLOCK_VALUES}`);
  return (count / MXFP4_BLOCK_VALUES) * MXFP4_BLOCK_BYTES;
}

function dtypeOf(info: GgufTensorInfo, path: string): DType {
  const dtype = GGML_TO_DTYPE.get(info.ggmlType);
  if (!dtype) {
    const typeName = GGML_TYPE_NAMES.get(info.ggmlType) ?? `ggml type ${info.ggmlType}`;
    throw new Error(`${path}: tensor ${info.name} has unsupported dtype ${typeName} (supported: ${GGML_SUPPORTED})`);
  }
  return dtype;
}

function rowBytes(info: GgufTensorInfo, dtype: DType, path: string): number {
  try {
    return bytesPerRow(dtype, info.dims[0] ?? 1);
  } catch (err) {
    throw new Error(`${path}: tensor ${info.name}: ${(err as Error).message}`, { cause: err });
  }
}

function tensorBytes(info: GgufTensorInfo, dtype: DType, path: string): number {
  const rows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  return rows * rowBytes(info, dtype, path);
}

/** Row i of the result is row from[i] of `data` (whole rows of `rowLen` bytes, so block-quantized rows too). */
function gatherRows(data: Uint8Array, from: Int32Array, rowLen: number): Uint8Array {
  const out = new Uint8Array(data.length);
  for (let i = 0; i < from.length; i++) out.set(data.subarray(from[i] * rowLen, (from[i] + 1) * rowLen), i * rowLen);
  return out;
}

/**
 * Undo convert_hf_to_gguf's permute(): within each head, HF row (half j, index i) was stored at
 * row 2i + j. Whole rows move, so this works for block-quantized rows too. Returns a new buffer.
 */
export function unpermuteRows(data: Uint8Array, rows: number, heads: number, rowLen: number): Uint8Array {
  if (rows % heads !== 0 || (rows / heads) % 2 !== 0) {
    throw new Error(`cannot un-interleave ${rows} rows into ${heads} heads of even size`);
  }
  const headDim = rows / heads;
  const half = headDim / 2;
  const out = new Uint8Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const src = (h * headDim + 2 * i + j) * rowLen;
        const dst = (h * headDim + j * half + i) * rowLen;
        out.set(data.subarray(src, src + rowLen), dst);
      }
    }
  }
  return out;
}
