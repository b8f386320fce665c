// GGUF v3 writer: metadata of every value type plus aligned tensor data. Used by tests and the
// benchmark to produce checkpoints that readGgufHeader and llama.cpp both accept.
import { openSync, writeSync, closeSync } from 'node:fs';
import { ALL_DTYPES, WEIGHT_DTYPES } from '../../kernels/dtypes.js';
import type { Tensor } from '../types.js';
import { GGML_TYPE } from './gguf-header.js';
import { MXFP4_BLOCK_BYTES, MXFP4_BLOCK_VALUES } from './mxfp4.js';

/** GGUF metadata value types, numbered as in the file format. */
export const GGUF_VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;
export type GgufScalarType = Exclude<keyof typeof GGUF_VALUE_TYPE, 'array'>;

/** A value with its GGUF type spelled out, for when inference would pick the wrong one (a float key holding 10000). */
export type GgufTypedValue =
  | { type: GgufScalarType; value: number | bigint | boolean | string }
  | { type: 'array'; itemType: GgufScalarType; value: ArrayLike<number | bigint | boolean | string> };

/**
 * What a metadata entry may hold. Plain values are typed by inference: string → string, boolean → bool,
 * integer → u32 (i32 if negative, u64/i64 beyond 32 bits), other numbers → f32, bigint → i64 (u64 when
 * ≥ 2^63), string[] → array of string, number[] → array of i32 if all integers else f32, typed arrays by
 * their element type. Use typed() to force a type.
 */
export type GgufMetadataValue =
  | string
  | boolean
  | number
  | bigint
  | string[]
  | number[]
  | boolean[]
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | GgufTypedValue;

export function typed(type: GgufScalarType, value: number | bigint | boolean | string): GgufTypedValue {
  return { type, value };
}
export function typedArray(itemType: GgufScalarType, value: ArrayLike<number | bigint | boolean | string>): GgufTypedValue {
  return { type: 'array', itemType, value };
}

/** A tensor's entry in the header: its data size follows from dims and type. */
export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) dimension, as readGgufHeader reports it. */
  dims: number[];
  ggmlType: number;
}

export interface GgufTensorInput extends GgufTensorInfo {
  data: Uint8Array;
}

export interface GgufWriteOptions {
  metadata: Record<string, GgufMetadataValue>;
  tensors?: GgufTensorInput[];
  /** Data alignment in bytes; written as general.alignment when not 32. Default: metadata's general.alignment or 32. */
  alignment?: number;
}

/** Elements per block and bytes per block of each ggml storage type this project reads (WEIGHT_DTYPES' rows). */
const GGML_BLOCK: Record<number, [number, number]> = {
  ...Object.fromEntries(ALL_DTYPES.map((d) => [WEIGHT_DTYPES[d].ggmlType, [WEIGHT_DTYPES[d].blockElements, WEIGHT_DTYPES[d].blockBytes]])),
  // Decoded at load only (loaders/mxfp4.ts): GPT-OSS's experts.
  [GGML_TYPE.MXFP4]: [MXFP4_BLOCK_VALUES, MXFP4_BLOCK_BYTES],
};

/** A loaded tensor (Hugging Face shape order) as a GGUF tensor (ggml dims order), under the given GGUF name. */
export function tensorToGguf(tensor: Tensor, ggufName = tensor.name): GgufTensorInput {
  return { name: ggufName, dims: [...tensor.shape].reverse(), ggmlType: WEIGHT_DTYPES[tensor.dtype].ggmlType, data: tensor.data };
}

/** Growable little-endian byte buffer for the header. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number) {
    this.reserve(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  i8(v: number) {
    this.reserve(1);
    this.buf.writeInt8(v, this.length);
    this.length += 1;
  }
  u16(v: number) {
    this.reserve(2);
    this.buf.writeUInt16LE(v, this.length);
    this.length += 2;
  }
  i16(v: number) {
    this.reserve(2);
    this.buf.writeInt16LE(v, this.length);
    this.length += 2;
  }
  u32(v: number) {
    this.reserve(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number) {
    this.reserve(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number) {
    this.reserve(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  f64(v: number) {
    this.reserve(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  u64(v: number | bigint) {
    this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  i64(v: number | bigint) {
    this.reserve(8);
    this.buf.writeBigInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  str(s: string) {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.reserve(bytes.length);
    bytes.copy(this.buf, this.length);
    this.length += bytes.length;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function inferType(value: Exclude<GgufMetadataValue, GgufTypedValue>): GgufTypedValue {
  if (typeof value === 'string') return typed('string', value);
  if (typeof value === 'boolean') return typed('bool', value);
  if (typeof value === 'bigint') return typed(value >= 2n ** 63n ? 'u64' : 'i64', value);
  if (typeof value === 'number') return typed(integerType(value) ?? 'f32', value);
  if (value instanceof Float32Array) return typedArray('f32', value);
  if (value instanceof Float64Array) return typedArray('f64', value);
  if (value instanceof Int8Array) return typedArray('i8', value);
  if (value instanceof Uint8Array) return typedArray('u8', value);
  if (value instanceof Int16Array) return typedArray('i16', value);
  if (value instanceof Uint16Array) return typedArray('u16', value);
  if (value instanceof Int32Array) return typedArray('i32', value);
  if (value instanceof Uint32Array) return typedArray('u32', value);
  const items = value as ArrayLike<unknown>;
  if (items.length === 0) return typedArray('string', []);
  const first = items[0];
  if (typeof first === 'string') return typedArray('string', value as string[]);
  if (typeof first === 'boolean') return typedArray('bool', value as boolean[]);
  const numbers = value as number[];
  return typedArray(numbers.every((n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31) ? 'i32' : 'f32', numbers);
}

function integerType(n: number): GgufScalarType | null {
  if (!Number.isInteger(n)) return null;
  if (n >= 0) return n < 2 ** 32 ? 'u32' : 'u64';
  return n >= -(2 ** 31) ? 'i32' : 'i64';
}

function writeScalar(sink: ByteSink, type: GgufScalarType, v: number | bigint | boolean | string, key: string): void {
  const num = () => {
    if (typeof v !== 'number') throw new TypeError(`GGUF metadata ${key}: ${type} needs a number, got ${typeof v}`);
    return v;
  };
  switch (type) {
    case 'u8':
      return sink.u8(num());
    case 'i8':
      return sink.i8(num());
    case 'u16':
      return sink.u16(num());
    case 'i16':
      return sink.i16(num());
    case 'u32':
      return sink.u32(num());
    case 'i32':
      return sink.i32(num());
    case 'f32':
      return sink.f32(num());
    case 'f64':
      return sink.f64(num());
    case 'u64':
      return sink.u64(typeof v === 'bigint' ? v : num());
    case 'i64':
      return sink.i64(typeof v === 'bigint' ? v : num());
    case 'bool':
      return sink.u8(v ? 1 : 0);
    case 'string':
      if (typeof v !== 'string') throw new TypeError(`GGUF metadata ${key}: string needs a string, got ${typeof v}`);
      return sink.str(v);
  }
}

function writeValue(sink: ByteSink, key: string, raw: GgufMetadataValue): void {
  const isTyped = typeof raw === 'object' && raw !== null && 'type' in raw && !ArrayBuffer.isView(raw) && !Array.isArray(raw);
  const v = isTyped ? (raw as GgufTypedValue) : inferType(raw as Exclude<GgufMetadataValue, GgufTypedValue>);
  sink.u32(GGUF_VALUE_TYPE[v.type]);
  if (v.type !== 'array') return writeScalar(sink, v.type, v.value, key);
  sink.u32(GGUF_VALUE_TYPE[v.itemType]);
  sink.u64(v.value.length);
  for (let i = 0; i < v.value.length; i++) writeScalar(sink, v.itemType, v.value[i], key);
}

/** Bytes of a tensor's data in its ggml type. */
export function ggufTensorByteSize(t: GgufTensorInfo): number {
  const block = GGML_BLOCK[t.ggmlType];
  if (!block) throw new Error(`GGUF tensor ${t.name}: unsupported ggml type ${t.ggmlType}`);
  const [perBlock, bytesPerBlock] = block;
  if (t.dims[0] % perBlock !== 0)
    throw new Error(`GGUF tensor ${t.name}: row of ${t.dims[0]} is not a whole number of ${perBlock}-element blocks`);
  const elements = t.dims.reduce((a, b) => a * b, 1);
  return (elements / perBlock) * bytesPerBlock;
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

function writeAll(fd: number, data: Uint8Array): void {
  let done = 0;
  while (done < data.byteLength) done += writeSync(fd, data, done, data.byteLength - done);
}

export interface GgufHeader {
  /** The header bytes; tensor data starts at the next multiple of `alignment`. */
  bytes: Buffer;
  alignment: number;
  /** Each tensor's offset from the start of the data section. */
  offsets: number[];
  /** Size of the data section, padding included. */
  dataBytes: number;
}

/**
 * The header of a GGUF v3 file: metadata, then tensor descriptors. Writers stream the data after it
 * (writeGguf here; the benchmark's generator writes multi-GB files tensor by tensor).
 */
export function encodeGgufHeader(
  metadataIn: Record<string, GgufMetadataValue>,
  tensors: readonly GgufTensorInfo[],
  alignmentIn?: number,
): GgufHeader {
  const metadata: Record<string, GgufMetadataValue> = { ...metadataIn };
  const declared = metadata['general.alignment'];
  const declaredValue = typeof declared === 'object' && declared !== null && 'value' in declared ? declared.value : declared;
  const alignment = alignmentIn ?? (typeof declaredValue === 'number' ? declaredValue : 32);
  if (!Number.isInteger(alignment) || alignment <= 0 || alignment % 8 !== 0)
    throw new Error(`GGUF alignment must be a positive multiple of 8, got ${alignment}`);
  if (alignment !== 32) metadata['general.alignment'] = typed('u32', alignment);

  const sink = new ByteSink();
  sink.u32(0x46554747); // "GGUF"
  sink.u32(3);
  sink.u64(tensors.length);
  sink.u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    sink.str(key);
    writeValue(sink, key, value);
  }
  // Offsets are relative to the start of the data section; each tensor starts aligned.
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const size = ggufTensorByteSize(t);
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(t.ggmlType);
    sink.u64(offset);
    offsets.push(offset);
    offset = align(offset + size, alignment);
  }
  return { bytes: sink.bytes(), alignment, offsets, dataBytes: offset };
}

/** Write a GGUF v3 file. Tensor data goes straight from each tensor's buffer to disk. */
export function writeGguf(path: string, opts: GgufWriteOptions): void {
  const tensors = opts.tensors ?? [];
  for (const t of tensors) {
    const size = ggufTensorByteSize(t);
    if (t.data.byteLength !== size)
      throw new Error(`GGUF tensor ${t.name}: data has ${t.data.byteLength} bytes, dims ${t.dims.join('x')} need ${size}`);
  }
  const { bytes: header, alignment, offsets, dataBytes } = encodeGgufHeader(opts.metadata, tensors, opts.alignment);
  const fd = openSync(path, 'w');
  try {
    writeAll(fd, header);
    let pos = header.length;
    const dataStart = align(pos, alignment);
    const zeros = Buffer.alloc(alignment);
    const pad = (to: number) => {
      if (to > pos) writeAll(fd, zeros.subarray(0, to - pos));
      pos = to;
    };
    tensors.forEach((t, i) => {
      pad(dataStart + offsets[i]);
      writeAll(fd, t.data);
      pos += t.data.byteLength;
    });
    if (tensors.length > 0) pad(dataStart + dataBytes);
  } finally {
    closeSync(fd);
  }
}
