// GGUF checkpoints: one file holding metadata and ggml tensors. Tensors come out under Hugging Face
// names, in row-major shape, with llama.cpp's Q/K row interleave undone so every architecture sees
// Hugging Face layout (and rotates with neox-style RoPE). Stacked expert tensors (ffn_*_exps) stay
// whole, [experts, rows, cols]: the model slices out the experts it holds (expert-weights.ts).
import type { Checkpoint, DType, LoadProgress, Tensor } from '../types.js';
import { architectureNamed } from '../architectures/index.js';
import { configFromGguf } from '../model-config.js';
import { ALL_DTYPES, WEIGHT_DTYPES, bytesPerRow } from '../../kernels/dtypes.js';
import { GGML_TYPE, readGgufHeader, type GgufTensorInfo } from './gguf-header.js';
import { mapFile } from './file-bytes.js';
import { DerivedBytes, MappedResidency } from './mapped-residency.js';
import { PackedWeightCache, type CacheLog, type PackedCacheSettings } from './packed-cache.js';

/** ggml type ids → the weight dtypes (each dtype's row in WEIGHT_DTYPES names its ggml type). */
const GGML_TO_DTYPE = new Map<number, DType>(ALL_DTYPES.map((d) => [WEIGHT_DTYPES[d].ggmlType, d]));

const GGML_TYPE_NAMES = new Map<number, string>(Object.entries(GGML_TYPE).map(([k, v]) => [v, k]));
const GGML_SUPPORTED = ALL_DTYPES.map((d) => GGML_TYPE_NAMES.get(WEIGHT_DTYPES[d].ggmlType) ?? d).join(', ');

const TOP_LEVEL_NAMES: Record<string, string> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

const LAYER_NAMES: Record<string, string> = {
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  attn_norm: 'input_layernorm',
  ffn_norm: 'post_attention_layernorm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
  // Mixture of experts: the router, and every expert's weights stacked [experts, rows, cols] in one
  // tensor, named as transformers 5 names its stacked experts (gate and up kept apart).
  ffn_gate_inp: 'mlp.gate',
};

/** Stacked expert tensors (blk.N.ffn_*_exps.weight) → their names under model.layers.N. */
const STACKED_EXPERT_NAMES: Record<string, string> = {
  ffn_gate_exps: 'mlp.experts.gate_proj',
  ffn_up_exps: 'mlp.experts.up_proj',
  ffn_down_exps: 'mlp.experts.down_proj',
};

/** Older Mixtral GGUFs' one tensor per expert (blk.N.ffn_gate.E.weight) → Hugging Face's per-expert names. */
const PER_EXPERT_NAMES: Record<string, string> = { ffn_gate: 'gate_proj', ffn_up: 'up_proj', ffn_down: 'down_proj' };

/** llama.cpp tensor name → Hugging Face name (null for tensors we have no use for, e.g. rope_freqs). */
export function hfNameOf(ggufName: string): string | null {
  if (TOP_LEVEL_NAMES[ggufName]) return TOP_LEVEL_NAMES[ggufName];
  const expert = /^blk\.(\d+)\.(ffn_gate|ffn_up|ffn_down)\.(\d+)\.weight$/.exec(ggufName);
  if (expert) return `model.layers.${expert[1]}.mlp.experts.${expert[3]}.${PER_EXPERT_NAMES[expert[2]]}.weight`;
  const m = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(ggufName);
  if (!m) return null;
  const stacked = STACKED_EXPERT_NAMES[m[2]];
  if (stacked && m[3] === 'weight') return `model.layers.${m[1]}.${stacked}`;
  const part = LAYER_NAMES[m[2]];
  return part ? `model.layers.${m[1]}.${part}.${m[3]}` : null;
}

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
  const config = configFromGguf(metadata, {
    hasOutputWeight: infos.has('output.weight'),
    embeddingRows: infos.get('token_embd.weight')?.dims[1],
    routerLayers: new Set(header.tensors.flatMap((t) => /^blk\.(\d+)\.ffn_gate_inp\.weight$/.exec(t.name)?.[1] ?? []).map(Number)),
    source: path,
  });
  // llama.cpp's converter interleaved the Q/K rows of some architectures (its "normal" RoPE).
  const qkPermuted = architectureNamed(config.architecture)?.module.ggufQkPermuted ?? false;

  // Validate every tensor against the file size before touching (or mapping) the data.
  for (const info of header.tensors) {
    const dtype = dtypeOf(info, path);
    const end = info.offset + tensorBytes(info, dtype, path);
    if (end > header.fileSize) {
      throw new Error(`${path}: tensor ${info.name} data lies beyond end of file (ends at byte ${end}, file has ${header.fileSize})`);
    }
  }

  const cache = fastLoad && packedCache ? PackedWeightCache.open(path, packedCache.settings, packedCache.log) : undefined;
  const file = mapFile(path, fastLoad);
  const residency = new MappedResidency(file, fastLoad, onProgress, !cache?.usable);
  const tensors = new Map<string, Tensor>();
  let first = Infinity;
  for (const info of header.tensors) {
    const name = hfNameOf(info.name);
    if (!name) continue;
    const dtype = dtypeOf(info, path);
    const shape = [...info.dims].reverse();
    const length = tensorBytes(info, dtype, path);
    const view = file.bytes.subarray(info.offset, info.offset + length);
    first = Math.min(first, info.offset);
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

/** A tensor whose data getter hands out `derived`'s copy (made on first read). */
function derivedTensor(name: string, dtype: DType, shape: number[], derived: DerivedBytes): Tensor {
  const tensor = { name, dtype, shape } as Tensor;
  Object.defineProperty(tensor, 'data', { enumerable: true, get: () => derived.get() });
  return tensor;
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
