// Streaming GGUF v3 writer: the header is written from tensor descriptors alone (sizes follow
// from dims and type), then each tensor's bytes are pushed in order, so a multi-GB checkpoint
// never sits in memory. src/model/loaders/gguf-writer.ts needs every tensor's bytes up front,
// which is why the benchmark has its own.
import { GGML_TYPE } from '../src/model/loaders/gguf-header.js';
import { BufferedFile } from './buffered-file.js';

/** A metadata value with its GGUF type spelled out (the format cares: u32 vs f32 vs i32). */
export type GgufMeta =
  | { type: 'string'; value: string }
  | { type: 'u32' | 'i32' | 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string[]'; value: readonly string[] }
  | { type: 'i32[]'; value: ArrayLike<number> };

export const meta = {
  str: (value: string): GgufMeta => ({ type: 'string', value }),
  u32: (value: number): GgufMeta => ({ type: 'u32', value }),
  i32: (value: number): GgufMeta => ({ type: 'i32', value }),
  f32: (value: number): GgufMeta => ({ type: 'f32', value }),
  bool: (value: boolean): GgufMeta => ({ type: 'bool', value }),
  strings: (value: readonly string[]): GgufMeta => ({ type: 'string[]', value }),
  i32s: (value: ArrayLike<number>): GgufMeta => ({ type: 'i32[]', value }),
};

export interface GgufTensorDescriptor {
  name: string;
  /** ggml order: dims[0] is the contiguous (row) dimension. */
  dims: number[];
  ggmlType: number;
}

const VALUE_TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 } as const;

/** [elements, bytes] per block of the types the benchmark writes. */
const BLOCK: Record<number, [number, number]> = {
  [GGML_TYPE.F32]: [1, 4], [GGML_TYPE.BF16]: [1, 2], [GGML_TYPE.Q8_0]: [32, 34], [GGML_TYPE.Q4_0]: [32, 18],
};

export function ggufTensorBytes(t: GgufTensorDescriptor): number {
  const block = BLOCK[t.ggmlType];
  if (!block) throw new Error(`${t.name}: ggml type ${t.ggmlType} is not written by the benchmark`);
  if (t.dims[0] % block[0] !== 0) throw new Error(`${t.name}: row of ${t.dims[0]} is not whole ${block[0]}-element blocks`);
  return (t.dims.reduce((a, b) => a * b, 1) / block[0]) * block[1];
}

/** Collects header bytes in chunks (the tokenizer alone is ~300k strings). */
class HeaderBytes {
  private readonly parts: Buffer[] = [];
  private cur = Buffer.alloc(1 << 20);
  private pos = 0;
  length = 0;

  private room(n: number): void {
    if (this.pos + n <= this.cur.length) return;
    this.parts.push(this.cur.subarray(0, this.pos));
    this.cur = Buffer.alloc(Math.max(1 << 20, n));
    this.pos = 0;
  }
  u32(v: number) { this.room(4); this.cur.writeUInt32LE(v, this.pos); this.pos += 4; this.length += 4; }
  i32(v: number) { this.room(4); this.cur.writeInt32LE(v, this.pos); this.pos += 4; this.length += 4; }
  f32(v: number) { this.room(4); this.cur.writeFloatLE(v, this.pos); this.pos += 4; this.length += 4; }
  u8(v: number) { this.room(1); this.cur.writeUInt8(v, this.pos); this.pos += 1; this.length += 1; }
  u64(v: number) { this.room(8); this.cur.writeBigUInt64LE(BigInt(v), this.pos); this.pos += 8; this.length += 8; }
  str(s: string) {
    const n = Buffer.byteLength(s, 'utf8');
    this.u64(n);
    this.room(n);
    this.cur.write(s, this.pos, 'utf8');
    this.pos += n;
    this.length += n;
  }
  bytes(): Buffer {
    return Buffer.concat([...this.parts, this.cur.subarray(0, this.pos)]);
  }
}

function writeMeta(h: HeaderBytes, v: GgufMeta): void {
  switch (v.type) {
    case 'string': h.u32(VALUE_TYPE.string); return h.str(v.value);
    case 'u32': h.u32(VALUE_TYPE.u32); return h.u32(v.value);
    case 'i32': h.u32(VALUE_TYPE.i32); return h.i32(v.value);
    case 'f32': h.u32(VALUE_TYPE.f32); return h.f32(v.value);
    case 'bool': h.u32(VALUE_TYPE.bool); return h.u8(v.value ? 1 : 0);
    case 'string[]':
      h.u32(VALUE_TYPE.array); h.u32(VALUE_TYPE.string); h.u64(v.value.length);
      for (const s of v.value) h.str(s);
      return;
    case 'i32[]':
      h.u32(VALUE_TYPE.array); h.u32(VALUE_TYPE.i32); h.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) h.i32(v.value[i]);
      return;
  }
}

const ALIGNMENT = 32;
const alignUp = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

/**
 * Writes a GGUF file: construct (writes the header), then for each descriptor in order call
 * write() with its bytes in as many pieces as convenient, then close().
 */
export class GgufStreamWriter {
  private readonly file: BufferedFile;
  private readonly sizes: number[];
  private tensor = 0;
  private writtenInTensor = 0;

  constructor(path: string, metadata: Record<string, GgufMeta>, private readonly tensors: GgufTensorDescriptor[]) {
    this.sizes = tensors.map(ggufTensorBytes);
    const h = new HeaderBytes();
    h.u32(0x46554747); // "GGUF"
    h.u32(3);
    h.u64(tensors.length);
    h.u64(Object.keys(metadata).length);
    for (const [key, value] of Object.entries(metadata)) {
      h.str(key);
      writeMeta(h, value);
    }
    let offset = 0;
    tensors.forEach((t, i) => {
      h.str(t.name);
      h.u32(t.dims.length);
      for (const d of t.dims) h.u64(d);
      h.u32(t.ggmlType);
      h.u64(offset);
      offset = alignUp(offset + this.sizes[i]);
    });
    this.file = new BufferedFile(path);
    this.file.write(h.bytes());
    this.pad();
  }

  /** Appends bytes of the current tensor. */
  write(bytes: Uint8Array): void {
    if (this.tensor >= this.tensors.length) throw new Error('GGUF writer: more data than tensors');
    const left = this.sizes[this.tensor] - this.writtenInTensor;
    if (bytes.byteLength > left) throw new Error(`GGUF writer: ${this.tensors[this.tensor].name} overflows its ${this.sizes[this.tensor]} bytes`);
    this.file.write(bytes);
    this.writtenInTensor += bytes.byteLength;
    if (this.writtenInTensor === this.sizes[this.tensor]) {
      this.tensor++;
      this.writtenInTensor = 0;
      this.pad();
    }
  }

  /** Flushes and closes; throws if a tensor is incomplete. Returns the file size. */
  close(): number {
    const complete = this.tensor === this.tensors.length;
    this.file.close(complete);
    if (!complete) throw new Error(`GGUF writer: closed after ${this.tensor} of ${this.tensors.length} tensors`);
    return this.file.position;
  }

  /** Closes after a failure, without the completeness check (the caller deletes the file). */
  abort(): void {
    this.file.close(false);
  }

  private pad(): void {
    const to = alignUp(this.file.position);
    if (to > this.file.position) this.file.write(new Uint8Array(to - this.file.position));
  }
}
