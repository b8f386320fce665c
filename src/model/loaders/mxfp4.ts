// MXFP4 tensors of safetensors checkpoints (GPT-OSS's experts: `<name>_blocks` U8 [..., R, G, 16] and
// `<name>_scales` U8 [..., R, G]). A block is 32 E2M1 values, two per byte (value 2i in byte i's low
// nibble, 2i + 1 in its high nibble), sharing one E8M0 scale 2^(s − 127). They are dequantized at load
// as transformers' convert_moe_packed_tensors does (dequantize=True): rows [..., R, G·32], then the
// last two axes swapped, giving the unquantized tensor `<name>` [..., G·32, R] — the layout the bf16
// checkpoints store (GPT-OSS: gate_up_proj [E, H, 2I], down_proj [E, I, H]). Stored as bf16, which holds
// every E2M1 value times a power of two exactly (as transformers' default dtype): 2 bytes a weight
// against MXFP4's 17 / 32, so the experts take 3.76× their file size in memory.
// GGUF files hold ggml's MXFP4 (type 39, ggml-common.h block_mxfp4): per 32 values one E8M0 byte, then
// 16 bytes whose low nibbles are values 0..15 and high nibbles values 16..31 (dequantize_row_mxfp4;
// llama.cpp's converter reorders the checkpoint's nibbles into that, conversion/gpt_oss.py). Decoded by
// dequantizeGgmlMxfp4 over the same E2M1 table.
import type { Tensor } from '../types.js';
import { f32ToBf16 } from '../../kernels/dequant.js';

/** The 16 E2M1 values by code (sign bit 8). */
export const FP4_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** ggml's MXFP4 block (block_mxfp4): 32 values in 1 scale byte + 16 nibble bytes. */
export const MXFP4_BLOCK_VALUES = 32;
export const MXFP4_BLOCK_BYTES = 17;

/**
 * Decodes ggml MXFP4 data (`count` values, a whole number of blocks) into f32: value j of a block
 * is E2M1(qs[j] & 15), value j + 16 is E2M1(qs[j] >> 4), times 2^(e − 127) (dequantize_row_mxfp4).
 */
export function dequantizeGgmlMxfp4(data: Uint8Array, count: number): Float32Array {
  if (count % MXFP4_BLOCK_VALUES !== 0) throw new Error(`MXFP4: ${count} values are not whole blocks of ${MXFP4_BLOCK_VALUES}`);
  const out = new Float32Array(count);
  for (let b = 0; b < count / MXFP4_BLOCK_VALUES; b++) {
    const at = b * MXFP4_BLOCK_BYTES;
    const scale = Math.pow(2, data[at] - 127);
    const o = b * MXFP4_BLOCK_VALUES;
    for (let j = 0; j < 16; j++) {
      const byte = data[at + 1 + j];
      out[o + j] = FP4_VALUES[byte & 15] * scale;
      out[o + j + 16] = FP4_VALUES[byte >> 4] * scale;
    }
  }
  return out;
}

/** A U8 tensor as the safetensors parser keeps it (not a weight dtype of its own). */
export interface RawU8Tensor {
  readonly name: string;
  readonly shape: number[];
  readonly data: Uint8Array;
}

/**
 * Dequantizes `rows` rows of `groups` MXFP4 blocks each (blocks [rows, groups, 16], scales [rows,
 * groups]) into out [rows, groups · 32] in f32.
 */
export function dequantizeMxfp4(blocks: Uint8Array, scales: Uint8Array, rows: number, groups: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    for (let g = 0; g < groups; g++) {
      const b = r * groups + g;
      const scale = Math.pow(2, scales[b] - 127);
      const o = b * 32;
      for (let i = 0; i < 16; i++) {
        const byte = blocks[b * 16 + i];
        out[o + 2 * i] = FP4_VALUES[byte & 15] * scale;
        out[o + 2 * i + 1] = FP4_VALUES[byte >> 4] * scale;
      }
    }
  }
}

/**
 * Replaces every `<name>_blocks` / `<name>_scales` pair of `raw` by the bf16 tensor `<name>` in
 * `tensors` (convert_moe_packed_tensors' layout). A U8 tensor of any other kind is an error.
 */
export function addMxfp4Tensors(raw: ReadonlyMap<string, RawU8Tensor>, tensors: Map<string, Tensor>, where: string): void {
  for (const [name, blocks] of raw) {
    if (name.endsWith('_scales') && raw.has(`${name.slice(0, -'_scales'.length)}_blocks`)) continue;
    if (!name.endsWith('_blocks'))
      throw new Error(`${where}: tensor ${name} has dtype U8, which svc reads only as MXFP4 _blocks / _scales`);
    const base = name.slice(0, -'_blocks'.length);
    const scales = raw.get(`${base}_scales`);
    if (!scales) throw new Error(`${where}: MXFP4 ${name} has no ${base}_scales`);
    tensors.set(base, mxfp4Tensor(base, blocks, scales, where));
  }
}

function mxfp4Tensor(name: string, blocks: RawU8Tensor, scales: RawU8Tensor, where: string): Tensor {
  const bs = blocks.shape;
  const ss = scales.shape;
  if (bs.length < 3 || bs[bs.length - 1] !== 16 || ss.length !== bs.length - 1 || ss.some((d, i) => d !== bs[i])) {
    throw new Error(
      `${where}: MXFP4 ${name}: blocks [${bs.join(', ')}] and scales [${ss.join(', ')}] do not pair ([..., R, G, 16] / [..., R, G])`,
    );
  }
  const groups = bs[bs.length - 2];
  const rows = bs[bs.length - 3];
  const outer = bs.slice(0, -3).reduce((a, b) => a * b, 1);
  const cols = groups * 32;
  const plane = new Float32Array(rows * cols);
  const bits = new Uint16Array(outer * rows * cols);
  for (let o = 0; o < outer; o++) {
    dequantizeMxfp4(
      blocks.data.subarray(o * rows * groups * 16, (o + 1) * rows * groups * 16),
      scales.data.subarray(o * rows * groups, (o + 1) * rows * groups),
      rows,
      groups,
      plane,
    );
    // transpose(-1, -2): [rows, cols] → [cols, rows].
    const base = o * rows * cols;
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) bits[base + c * rows + r] = f32ToBf16(plane[r * cols + c]);
  }
  return { name, dtype: 'bf16', shape: [...bs.slice(0, -3), cols, rows], data: new Uint8Array(bits.buffer) };
}
