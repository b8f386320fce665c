// The weight and KV-cache dtypes, each one row of a traits table with named fields (as ggml's
// type_traits): the code the addon takes, the block layout, and the reference codec. Everything that
// needs a dtype's size or decoder reads its row, so adding a dtype is a row here (and its codec), a
// row in native/dtypes.cc at the same code, and its kernel slots (native/kernels.h).
import {
  BLOCK_IQ4_NL_BYTES,
  BLOCK_Q2_K_BYTES,
  BLOCK_Q4_0_BYTES,
  BLOCK_Q4_1_BYTES,
  BLOCK_Q5_0_BYTES,
  BLOCK_Q5_1_BYTES,
  BLOCK_Q4_K_BYTES,
  BLOCK_Q5_K_BYTES,
  BLOCK_Q6_K_BYTES,
  BLOCK_Q8_0_BYTES,
  QK4_0,
  QK8_0,
  QK_K,
  decodeBf16Row,
  decodeF16Row,
  decodeF32Row,
  decodeIq4NlRow,
  decodeQ2KRow,
  decodeQ4KRow,
  decodeQ4_0Row,
  decodeQ4_1Row,
  decodeQ5KRow,
  decodeQ5_0Row,
  decodeQ5_1Row,
  decodeQ6KRow,
  decodeQ8_0Row,
  type RowDecoder,
} from './dequant.js';
import {
  BLOCK_IQ3_S_BYTES,
  BLOCK_IQ3_XXS_BYTES,
  BLOCK_IQ4_XS_BYTES,
  BLOCK_Q3_K_BYTES,
  BLOCK_TQ2_0_BYTES,
  decodeIq3SRow,
  decodeIq3XxsRow,
  decodeIq4XsRow,
  decodeQ3KRow,
  decodeTq2_0Row,
} from './dequant-k3-iq.js';
import {
  decodeBf16,
  decodeF32,
  decodeFp8Row,
  decodeNvfp4,
  encodeBf16,
  encodeF32,
  encodeFp8Row,
  encodeNvfp4,
  nvfp4RowBytes,
  type KvDecoder,
  type KvEncoder,
} from './kv-codec.js';
import { turboDecoder, turboEncoder, turboRowBytes, type TurboBits } from './kv-turbo.js';

// ---- weights ----

/** Storage types of weight tensors. Quantized ones use GGUF block layouts along each row. */
export type DType =
  | 'f32'
  | 'f16'
  | 'bf16'
  | 'q8_0'
  | 'q4_0'
  | 'q2_k'
  | 'q4_k'
  | 'q5_k'
  | 'q6_k'
  | 'q4_1'
  | 'q5_0'
  | 'q5_1'
  | 'iq4_nl'
  | 'q3_k'
  | 'iq4_xs'
  | 'iq3_xxs'
  | 'iq3_s'
  | 'tq2_0';

export interface WeightDTypeTraits {
  /** The addon's code for it (enum DType in native/quant.h; its row's index in native/dtypes.cc). */
  readonly code: number;
  /** Elements per block (plain floats: 1) and bytes per block. */
  readonly blockElements: number;
  readonly blockBytes: number;
  /** Reference decoder of one row (dequant.ts). */
  readonly decodeRow: RowDecoder;
  /**
   * Code of the packed layout nativeOps.prepareWeight repacks it into (native/packed.h: 16-row
   * groups for the int8 kernels), or null when the native ops multiply it as loaded.
   */
  readonly packedCode: number | null;
  /** Its ggml type id in GGUF files, and its safetensors dtype name (null: not stored there). */
  readonly ggmlType: number;
  readonly safetensors: string | null;
}

export const WEIGHT_DTYPES: { readonly [D in DType]: WeightDTypeTraits } = {
  f32: { code: 0, blockElements: 1, blockBytes: 4, decodeRow: decodeF32Row, packedCode: null, ggmlType: 0, safetensors: 'F32' },
  f16: { code: 1, blockElements: 1, blockBytes: 2, decodeRow: decodeF16Row, packedCode: null, ggmlType: 1, safetensors: 'F16' },
  bf16: { code: 2, blockElements: 1, blockBytes: 2, decodeRow: decodeBf16Row, packedCode: null, ggmlType: 30, safetensors: 'BF16' },
  q8_0: {
    code: 3,
    blockElements: QK8_0,
    blockBytes: BLOCK_Q8_0_BYTES,
    decodeRow: decodeQ8_0Row,
    packedCode: 9,
    ggmlType: 8,
    safetensors: null,
  },
  q4_0: {
    code: 4,
    blockElements: QK4_0,
    blockBytes: BLOCK_Q4_0_BYTES,
    decodeRow: decodeQ4_0Row,
    packedCode: 10,
    ggmlType: 2,
    safetensors: null,
  },
  q2_k: {
    code: 5,
    blockElements: QK_K,
    blockBytes: BLOCK_Q2_K_BYTES,
    decodeRow: decodeQ2KRow,
    packedCode: null,
    ggmlType: 10,
    safetensors: null,
  },
  q4_k: {
    code: 6,
    blockElements: QK_K,
    blockBytes: BLOCK_Q4_K_BYTES,
    decodeRow: decodeQ4KRow,
    packedCode: 20,
    ggmlType: 12,
    safetensors: null,
  },
  q5_k: {
    code: 7,
    blockElements: QK_K,
    blockBytes: BLOCK_Q5_K_BYTES,
    decodeRow: decodeQ5KRow,
    packedCode: 21,
    ggmlType: 13,
    safetensors: null,
  },
  q6_k: {
    code: 8,
    blockElements: QK_K,
    blockBytes: BLOCK_Q6_K_BYTES,
    decodeRow: decodeQ6KRow,
    packedCode: 22,
    ggmlType: 14,
    safetensors: null,
  },
  q4_1: {
    code: 11,
    blockElements: QK4_0,
    blockBytes: BLOCK_Q4_1_BYTES,
    decodeRow: decodeQ4_1Row,
    packedCode: 25,
    ggmlType: 3,
    safetensors: null,
  },
  q5_0: {
    code: 12,
    blockElements: QK4_0,
    blockBytes: BLOCK_Q5_0_BYTES,
    decodeRow: decodeQ5_0Row,
    packedCode: 23,
    ggmlType: 6,
    safetensors: null,
  },
  q5_1: {
    code: 13,
    blockElements: QK4_0,
    blockBytes: BLOCK_Q5_1_BYTES,
    decodeRow: decodeQ5_1Row,
    packedCode: 24,
    ggmlType: 7,
    safetensors: null,
  },
  iq4_nl: {
    code: 14,
    blockElements: QK4_0,
    blockBytes: BLOCK_IQ4_NL_BYTES,
    decodeRow: decodeIq4NlRow,
    packedCode: 26,
    ggmlType: 20,
    safetensors: null,
  },
  q3_k: {
    code: 15,
    blockElements: QK_K,
    blockBytes: BLOCK_Q3_K_BYTES,
    decodeRow: decodeQ3KRow,
    packedCode: null,
    ggmlType: 11,
    safetensors: null,
  },
  iq4_xs: {
    code: 16,
    blockElements: QK_K,
    blockBytes: BLOCK_IQ4_XS_BYTES,
    decodeRow: decodeIq4XsRow,
    packedCode: null,
    ggmlType: 23,
    safetensors: null,
  },
  iq3_xxs: {
    code: 17,
    blockElements: QK_K,
    blockBytes: BLOCK_IQ3_XXS_BYTES,
    decodeRow: decodeIq3XxsRow,
    packedCode: null,
    ggmlType: 18,
    safetensors: null,
  },
  iq3_s: {
    code: 18,
    blockElements: QK_K,
    blockBytes: BLOCK_IQ3_S_BYTES,
    decodeRow: decodeIq3SRow,
    packedCode: null,
    ggmlType: 21,
    safetensors: null,
  },
  tq2_0: {
    code: 19,
    blockElements: QK_K,
    blockBytes: BLOCK_TQ2_0_BYTES,
    decodeRow: decodeTq2_0Row,
    packedCode: null,
    ggmlType: 35,
    safetensors: null,
  },
};

/** Every weight dtype, in code order. */
export const ALL_DTYPES = Object.keys(WEIGHT_DTYPES) as DType[];

function weightTraits(dtype: DType): WeightDTypeTraits {
  const t = WEIGHT_DTYPES[dtype] as WeightDTypeTraits | undefined;
  if (!t) throw new Error(`unknown dtype ${String(dtype)}`);
  return t;
}

/** Bytes one row of `cols` elements occupies; throws when cols does not fill whole blocks. */
export function bytesPerRow(dtype: DType, cols: number): number {
  const t = weightTraits(dtype);
  if (cols % t.blockElements !== 0) {
    throw new Error(`${dtype} rows must be a multiple of ${t.blockElements} elements, got ${cols}`);
  }
  return (cols / t.blockElements) * t.blockBytes;
}

/**
 * Decode row `row` of a [rows, cols] matrix stored in `dtype` into out[outOffset .. outOffset+cols).
 * `data` holds the whole matrix (row r starts at r · bytesPerRow(dtype, cols)).
 */
export function dequantizeRow(dtype: DType, data: Uint8Array, row: number, cols: number, out: Float32Array, outOffset = 0): void {
  const rowBytes = bytesPerRow(dtype, cols);
  const start = row * rowBytes;
  if (start + rowBytes > data.length) {
    throw new Error(`dequantizeRow: row ${row} (${rowBytes} bytes of ${dtype}) lies beyond the ${data.length}-byte tensor`);
  }
  if (outOffset + cols > out.length) throw new Error(`dequantizeRow: output too short for ${cols} values at ${outOffset}`);
  WEIGHT_DTYPES[dtype].decodeRow(data, start, cols, out, outOffset);
}

/** Decode a whole [rows, cols] tensor to f32 (convenience for norms, biases, tests). */
export function dequantize(dtype: DType, data: Uint8Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) dequantizeRow(dtype, data, r, cols, out, r * cols);
  return out;
}

// ---- KV cache ----

/**
 * Storage types of the paged KV cache: per element f32, bf16, fp8 (OCP E4M3 with a per-layer
 * scale); per head vector nvfp4 (E2M1 with E4M3 scales per 16 and the layer scale) and turbo2-8
 * (rotated, Lloyd–Max indices of 2, 3, 4 or 8 bits and one scale; kv-turbo.ts).
 */
export type KvDType = 'f32' | 'bf16' | 'fp8' | 'nvfp4' | 'turbo2' | 'turbo3' | 'turbo4' | 'turbo8';

export interface KvDTypeTraits {
  /** The addon's code for it (enum KvDType in native/quant.h; its row's index in native/dtypes.cc). */
  readonly code: number;
  /** Bytes of one head vector of headDim values: the cache is [blocks][blockSize][kvHeads][rowBytes]. */
  readonly rowBytes: (headDim: number) => number;
  /** A side's storage must start at a multiple of this (rows are read in place as f32 / 16-bit words). */
  readonly align: number;
  /** Stored values are divided by the layer's kScale / vScale, which must then be > 0; others ignore the scale. */
  readonly scaled: boolean;
  /**
   * Rows hold R·x (kv-turbo.ts): native attention rotates the queries (K) or un-rotates the outputs
   * (V) instead of decoding every row back; the reference decoder below gives x.
   */
  readonly rotated: boolean;
  /** Reference codec of one row (kv-codec.ts, kv-turbo.ts). */
  readonly encode: KvEncoder;
  readonly decode: KvDecoder;
}

function turbo(code: number, bits: TurboBits): KvDTypeTraits {
  return {
    code,
    rowBytes: (headDim) => turboRowBytes(bits, headDim),
    align: 1,
    scaled: false,
    rotated: true,
    encode: turboEncoder(bits),
    decode: turboDecoder(bits),
  };
}

export const KV_DTYPES: { readonly [D in KvDType]: KvDTypeTraits } = {
  f32: { code: 0, rowBytes: (hd) => 4 * hd, align: 4, scaled: false, rotated: false, encode: encodeF32, decode: decodeF32 },
  bf16: { code: 1, rowBytes: (hd) => 2 * hd, align: 2, scaled: false, rotated: false, encode: encodeBf16, decode: decodeBf16 },
  fp8: { code: 2, rowBytes: (hd) => hd, align: 1, scaled: true, rotated: false, encode: encodeFp8Row, decode: decodeFp8Row },
  nvfp4: { code: 3, rowBytes: nvfp4RowBytes, align: 1, scaled: true, rotated: false, encode: encodeNvfp4, decode: decodeNvfp4 },
  turbo2: turbo(4, 2),
  turbo3: turbo(5, 3),
  turbo4: turbo(6, 4),
  turbo8: turbo(7, 8),
};

/** Every KV dtype, in code order. */
export const ALL_KV_DTYPES = Object.keys(KV_DTYPES) as KvDType[];

/** Bytes of one head vector of `headDim` values in `dtype`. */
export function kvRowBytes(dtype: KvDType, headDim: number): number {
  return KV_DTYPES[dtype].rowBytes(headDim);
}

/** Encode the head vector src[srcOffset .. srcOffset+headDim) into the row at dst[dstByte ..]. */
export function encodeKvRow(
  dtype: KvDType,
  scale: number,
  src: Float32Array,
  srcOffset: number,
  headDim: number,
  dst: Uint8Array,
  dstByte: number,
): void {
  KV_DTYPES[dtype].encode(scale, src, srcOffset, headDim, dst, dstByte);
}

/** Decode the row at src[srcByte ..] into out[outOffset .. outOffset+headDim) (un-rotated). */
export function decodeKvRow(
  dtype: KvDType,
  scale: number,
  src: Uint8Array,
  srcByte: number,
  headDim: number,
  out: Float32Array,
  outOffset: number,
): void {
  KV_DTYPES[dtype].decode(scale, src, srcByte, headDim, out, outOffset);
}
