// Writes small safetensors files for tests (random checkpoints built in a temp directory), and the
// deterministic PRNG they draw their weights from.
import { writeFileSync } from 'node:fs';
import { f32ToBf16, f32ToF16 } from '../../src/kernels/dequant.js';

export type StoredDType = 'bf16' | 'f16' | 'f32';

const ST_NAMES: Record<StoredDType, string> = { bf16: 'BF16', f16: 'F16', f32: 'F32' };

/** mulberry32: a small deterministic PRNG; normal() by Box–Muller. */
export function rng(seed: number): { uniform(): number; normal(): number } {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    uniform,
    normal: () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform()),
  };
}

export interface SafetensorsEntry {
  name: string;
  shape: number[];
  values: Float32Array;
  dtype: StoredDType;
}

function encode(values: Float32Array, dtype: StoredDType): Uint8Array {
  if (dtype === 'f32') return new Uint8Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength));
  const out = new Uint16Array(values.length);
  const conv = dtype === 'bf16' ? f32ToBf16 : f32ToF16;
  for (let i = 0; i < values.length; i++) out[i] = conv(values[i]);
  return new Uint8Array(out.buffer);
}

export function writeSafetensors(path: string, entries: SafetensorsEntry[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const bytes = encode(e.values, e.dtype);
    header[e.name] = { dtype: ST_NAMES[e.dtype], shape: e.shape, data_offsets: [offset, offset + bytes.length] };
    blobs.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const lead = Buffer.alloc(8);
  lead.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  writeFileSync(path, Buffer.concat([lead, Buffer.from(json, 'utf8'), ...blobs]));
}
