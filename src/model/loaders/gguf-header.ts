// GGUF v2/v3 header reader: metadata key/values and tensor descriptors. Tensor data is read elsewhere.
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';

/** Every ggml type id (ggml.h), so messages can name types svc does not run too. */
export const GGML_TYPE = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ3_XXS: 18,
  IQ1_S: 19,
  IQ4_NL: 20,
  IQ3_S: 21,
  IQ2_S: 22,
  IQ4_XS: 23,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  IQ1_M: 29,
  BF16: 30,
  TQ1_0: 34,
  TQ2_0: 35,
  MXFP4: 39,
} as const;

export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  ggmlType: number;
  /** Absolute byte offset of the tensor's data in the file. */
  offset: number;
}

export interface GgufHeader {
  version: number;
  metadata: Record<string, unknown>;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute offset where tensor data begins. */
  dataOffset: number;
  fileSize: number;
}

export class GgufFormatError extends Error {}

/** Buffered forward reader over a file descriptor, growing its window as the header is parsed. */
class HeaderReader {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  pos = 0;
  constructor(
    private fd: number,
    private fileSize: number,
    private path: string,
  ) {}

  private ensure(n: number): void {
    const end = this.pos + n;
    if (end > this.fileSize)
      throw new GgufFormatError(`${this.path}: truncated GGUF header (needs byte ${end}, file has ${this.fileSize})`);
    if (end <= this.bufStart + this.buf.length) return;
    const want = Math.max(end - this.pos, 1 << 20);
    const len = Math.min(want, this.fileSize - this.pos);
    const b = Buffer.alloc(len);
    let got = 0;
    while (got < len) {
      const r = readSync(this.fd, b, got, len - got, this.pos + got);
      if (r === 0) break;
      got += r;
    }
    this.buf = b.subarray(0, got);
    this.bufStart = this.pos;
  }
  /**
   * Advances past n bytes and returns where they start in `buf` (no Buffer per value: a vocabulary has
   * 150k strings). It may replace `buf`: read `this.buf` only after calling it.
   */
  private at(n: number): number {
    this.ensure(n);
    const o = this.pos - this.bufStart;
    this.pos += n;
    return o;
  }
  u8() {
    const o = this.at(1);
    return this.buf[o]!;
  }
  i8() {
    const o = this.at(1);
    return this.buf.readInt8(o);
  }
  u16() {
    const o = this.at(2);
    return this.buf.readUInt16LE(o);
  }
  i16() {
    const o = this.at(2);
    return this.buf.readInt16LE(o);
  }
  u32() {
    const o = this.at(4);
    return this.buf.readUInt32LE(o);
  }
  i32() {
    const o = this.at(4);
    return this.buf.readInt32LE(o);
  }
  f32() {
    const o = this.at(4);
    return this.buf.readFloatLE(o);
  }
  f64() {
    const o = this.at(8);
    return this.buf.readDoubleLE(o);
  }
  u64() {
    const o = this.at(8);
    const hi = this.buf.readUInt32LE(o + 4);
    // 2^53 - 1 is the largest exact integer: hi may use 21 bits.
    if (hi >= 0x200000) throw new GgufFormatError(`${this.path}: 64-bit value too large`);
    return hi * 0x100000000 + this.buf.readUInt32LE(o);
  }
  i64() {
    const o = this.at(8);
    return Number(this.buf.readBigInt64LE(o));
  }
  /** Moves past n bytes without reading them. */
  skip(n: number) {
    if (this.pos + n > this.fileSize)
      throw new GgufFormatError(`${this.path}: truncated GGUF header (needs byte ${this.pos + n}, file has ${this.fileSize})`);
    this.pos += n;
  }
  /** Bytes left in the file: bounds element counts before allocating for them. */
  remaining() {
    return this.fileSize - this.pos;
  }
  str() {
    const n = this.u64();
    const o = this.at(n);
    return this.buf.toString('utf8', o, o + n);
  }
}

/** Bytes of one value of each fixed-size metadata type. */
const VALUE_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** Arrays longer than this are the tokenizer's (tokens, scores, types, merges): what `skipLargeArrays` leaves out. */
const LARGE_ARRAY = 4096;

/** What readValue returns for an array it skipped. */
const SKIPPED = Symbol('skipped');

function skipValue(r: HeaderReader, type: number, path: string): void {
  const size = VALUE_BYTES[type];
  if (size !== undefined) r.skip(size);
  else if (type === 8) r.skip(r.u64());
  else readValue(r, type, path, true);
}

function readValue(r: HeaderReader, type: number, path: string, skipLargeArrays = false): unknown {
  switch (type) {
    case 0:
      return r.u8();
    case 1:
      return r.i8();
    case 2:
      return r.u16();
    case 3:
      return r.i16();
    case 4:
      return r.u32();
    case 5:
      return r.i32();
    case 6:
      return r.f32();
    case 7:
      return r.u8() !== 0;
    case 8:
      return r.str();
    case 9: {
      const itemType = r.u32();
      const count = r.u64();
      // Every element takes at least one byte; a larger count means a corrupt or truncated file.
      if (count > r.remaining())
        throw new GgufFormatError(`${path}: truncated GGUF header (array of ${count} items, ${r.remaining()} bytes left)`);
      if (skipLargeArrays && count > LARGE_ARRAY) {
        const size = VALUE_BYTES[itemType];
        if (size !== undefined) r.skip(count * size);
        else for (let i = 0; i < count; i++) skipValue(r, itemType, path);
        return SKIPPED;
      }
      if (itemType === 8) {
        const out: string[] = new Array(count);
        for (let i = 0; i < count; i++) out[i] = r.str();
        return out;
      }
      if (itemType === 6) {
        const out = new Float32Array(count);
        for (let i = 0; i < count; i++) out[i] = r.f32();
        return out;
      }
      if (itemType === 5) {
        const out = new Int32Array(count);
        for (let i = 0; i < count; i++) out[i] = r.i32();
        return out;
      }
      if (itemType === 4) {
        const out = new Uint32Array(count);
        for (let i = 0; i < count; i++) out[i] = r.u32();
        return out;
      }
      const out: unknown[] = new Array(count);
      for (let i = 0; i < count; i++) out[i] = readValue(r, itemType, path);
      return out;
    }
    case 10:
      return r.u64();
    case 11:
      return r.i64();
    case 12:
      return r.f64();
    default:
      throw new GgufFormatError(`${path}: unknown GGUF metadata value type ${type}`);
  }
}

export interface ReadGgufHeaderOptions {
  /**
   * Leave arrays of more than 4096 items out of the metadata: the tokenizer's vocabulary, scores and
   * merges, which cost most of the parsing and which only the tokenizer needs. Default false.
   */
  skipLargeArrays?: boolean;
}

/** Parse the header of a GGUF file (versions 2 and 3). */
export function readGgufHeader(path: string, opts: ReadGgufHeaderOptions = {}): GgufHeader {
  const fd = openSync(path, 'r');
  try {
    const fileSize = fstatSync(fd).size;
    const r = new HeaderReader(fd, fileSize, path);
    if (fileSize < 24) throw new GgufFormatError(`${path}: not a GGUF file (too short)`);
    const magic = r.u32();
    if (magic !== 0x46554747) throw new GgufFormatError(`${path}: not a GGUF file (bad magic)`);
    const version = r.u32();
    if (version !== 2 && version !== 3) throw new GgufFormatError(`${path}: unsupported GGUF version ${version}`);
    const nTensors = r.u64();
    const nKv = r.u64();
    const metadata: Record<string, unknown> = {};
    for (let i = 0; i < nKv; i++) {
      const key = r.str();
      const value = readValue(r, r.u32(), path, opts.skipLargeArrays);
      if (value !== SKIPPED) metadata[key] = value;
    }
    const tensors: GgufTensorInfo[] = [];
    for (let i = 0; i < nTensors; i++) {
      const name = r.str();
      const nDims = r.u32();
      if (nDims > 8) throw new GgufFormatError(`${path}: tensor ${name} has ${nDims} dims`);
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(r.u64());
      const ggmlType = r.u32();
      const offset = r.u64();
      tensors.push({ name, dims, ggmlType, offset });
    }
    const alignment = typeof metadata['general.alignment'] === 'number' ? (metadata['general.alignment'] as number) : 32;
    const dataOffset = Math.ceil(r.pos / alignment) * alignment;
    for (const t of tensors) t.offset += dataOffset;
    return { version, metadata, tensors, alignment, dataOffset, fileSize };
  } finally {
    closeSync(fd);
  }
}
