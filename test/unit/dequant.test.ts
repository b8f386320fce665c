// Numerics of the dtype conversions and block dequantizers in src/kernels/dequant.ts, reached through
// the weight dtype traits (src/kernels/dtypes.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, quantizeRowQ4_0, quantizeRowQ8_0 } from '../../src/kernels/dequant.js';
import { bytesPerRow, dequantize, dequantizeRow } from '../../src/kernels/dtypes.js';
import { readGgufHeader, GGML_TYPE } from '../../src/model/loaders/gguf-header.js';
import type { DType } from '../../src/model/types.js';
import { FIXTURES } from '../helpers/paths.js';

/** Deterministic pseudo-random values (LCG), so failures reproduce. */
function randomValues(n: number, seed: number, scale: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

test('f16 known values decode and encode exactly', () => {
  assert.equal(f16ToF32(0x3c00), 1);
  assert.equal(f16ToF32(0xc000), -2);
  assert.equal(f16ToF32(0x7bff), 65504);
  assert.equal(f16ToF32(0x0001), 2 ** -24);
  assert.equal(f16ToF32(0x0400), 2 ** -14);
  assert.equal(f16ToF32(0x7c00), Infinity);
  assert.equal(f16ToF32(0xfc00), -Infinity);
  assert.ok(Number.isNaN(f16ToF32(0x7e00)));
  assert.equal(Object.is(f16ToF32(0x8000), -0), true);
  assert.equal(f32ToF16(1 / 3), 0x3555);
  assert.equal(f32ToF16(65519), 0x7bff); // below the halfway point to 65536
  assert.equal(f32ToF16(65520), 0x7c00); // tie rounds to even → overflows to inf
  assert.equal(f32ToF16(2 ** -25), 0); // exact tie between 0 and the smallest subnormal → even (0)
  assert.equal(f32ToF16(1.5 * 2 ** -25), 0x0001);
  assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00); // tie → even mantissa
  assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02); // tie → even mantissa (up)
  assert.equal(f32ToF16(-0), 0x8000);
  assert.equal(f32ToF16(NaN) & 0x7e00, 0x7e00);
});

test('every finite f16 round-trips through f32', () => {
  for (let h = 0; h < 65536; h++) {
    if ((h & 0x7c00) === 0x7c00) continue;
    assert.equal(f32ToF16(f16ToF32(h)), h, `half 0x${h.toString(16)}`);
  }
});

test('bf16 known values and round to nearest even', () => {
  assert.equal(bf16ToF32(0x3f80), 1);
  assert.equal(bf16ToF32(0xc040), -3);
  assert.equal(f32ToBf16(1), 0x3f80);
  assert.equal(f32ToBf16(Math.PI), 0x4049);
  assert.equal(f32ToBf16(1 + 2 ** -8), 0x3f80); // tie → even
  assert.equal(f32ToBf16(1 + 3 * 2 ** -8), 0x3f82); // tie → even (up)
  assert.equal(f32ToBf16(1 + 2 ** -8 + 2 ** -20), 0x3f81); // just above the tie
  assert.equal(f32ToBf16(NaN), 0x7fc0);
  assert.equal(f32ToBf16(-Infinity), 0xff80);
  for (let h = 0; h < 65536; h += 7) {
    if ((h & 0x7f80) === 0x7f80 && h & 0x7f) continue; // NaN payloads are not preserved
    assert.equal(f32ToBf16(bf16ToF32(h)), h);
  }
});

test('plain-float rows decode at any row and output offset', () => {
  const values = randomValues(24, 7, 3);
  const f32 = new Uint8Array(values.buffer.slice(0));
  const f16 = new Uint8Array(48);
  const bf16 = new Uint8Array(48);
  for (let i = 0; i < 24; i++) {
    const h = f32ToF16(values[i]);
    f16[2 * i] = h & 0xff;
    f16[2 * i + 1] = h >> 8;
    const b = f32ToBf16(values[i]);
    bf16[2 * i] = b & 0xff;
    bf16[2 * i + 1] = b >> 8;
  }
  const out = new Float32Array(10);
  dequantizeRow('f32', f32, 2, 8, out, 2);
  assert.deepEqual(Array.from(out.subarray(2)), Array.from(values.subarray(16, 24)));
  // An unaligned f32 source (offset by one byte) still decodes.
  const shifted = new Uint8Array(f32.length + 1);
  shifted.set(f32, 1);
  dequantizeRow('f32', shifted.subarray(1), 1, 8, out, 0);
  assert.deepEqual(Array.from(out.subarray(0, 8)), Array.from(values.subarray(8, 16)));
  dequantizeRow('f16', f16, 1, 8, out, 0);
  for (let i = 0; i < 8; i++) assert.equal(out[i], f16ToF32(f32ToF16(values[8 + i])));
  dequantizeRow('bf16', bf16, 0, 8, out, 1);
  for (let i = 0; i < 8; i++) assert.equal(out[1 + i], bf16ToF32(f32ToBf16(values[i])));
});

test('Q8_0 hand-built block decodes to d·q', () => {
  const block = new Uint8Array(34);
  block[0] = 0x00;
  block[1] = 0x38; // d = 0.5 as f16 (0x3800)
  const qs = [-128, -127, -1, 0, 1, 2, 127];
  qs.forEach((q, j) => {
    block[2 + j] = q & 0xff;
  });
  const out = new Float32Array(32);
  dequantizeRow('q8_0', block, 0, 32, out);
  assert.deepEqual(
    Array.from(out.subarray(0, 7)),
    qs.map((q) => q * 0.5),
  );
  assert.equal(out[31], 0);
});

test('Q4_0 hand-built block: low nibbles first, then high nibbles, offset by 8', () => {
  const block = new Uint8Array(18);
  block[0] = 0x00;
  block[1] = 0x40; // d = 2
  for (let j = 0; j < 16; j++) block[2 + j] = (j & 0xf) | ((15 - j) << 4);
  const out = new Float32Array(32);
  dequantizeRow('q4_0', block, 0, 32, out);
  for (let j = 0; j < 16; j++) {
    assert.equal(out[j], 2 * (j - 8));
    assert.equal(out[16 + j], 2 * (15 - j - 8));
  }
});

test('Q8_0 quantizer round trip stays within half a step', () => {
  const cols = 128;
  const x = randomValues(cols * 3, 11, 5);
  for (let r = 0; r < 3; r++) {
    const q = quantizeRowQ8_0(x, cols, r * cols);
    assert.equal(q.length, bytesPerRow('q8_0', cols));
    const y = new Float32Array(cols);
    dequantizeRow('q8_0', q, 0, cols, y);
    for (let b = 0; b < cols / 32; b++) {
      const d = f16ToF32(q[b * 34] | (q[b * 34 + 1] << 8));
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[r * cols + b * 32 + j]));
      assert.ok(Math.abs(d - amax / 127) <= (amax / 127) * 2 ** -10, 'scale is amax/127 in f16');
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        // Half a step, plus the f16 rounding of d scaled by up to 127.
        assert.ok(Math.abs(y[i] - x[r * cols + i]) <= 0.5 * d + 127 * d * 2 ** -11 + 1e-6, `elem ${i}`);
      }
    }
  }
});

test('Q4_0 quantizer round trip: the extreme value is exact-ish, the rest within a step', () => {
  const cols = 64;
  const x = randomValues(cols, 5, 2);
  const q = quantizeRowQ4_0(x, cols);
  const y = dequantize('q4_0', q, 1, cols);
  for (let b = 0; b < 2; b++) {
    const d = f16ToF32(q[b * 18] | (q[b * 18 + 1] << 8));
    let maxIdx = b * 32;
    for (let j = 0; j < 32; j++) if (Math.abs(x[b * 32 + j]) > Math.abs(x[maxIdx])) maxIdx = b * 32 + j;
    assert.ok(Math.abs(d - x[maxIdx] / -8) <= Math.abs(x[maxIdx] / 8) * 2 ** -10);
    // The largest magnitude maps to q = 0 → y = -8d = max (up to f16 rounding of d).
    assert.ok(Math.abs(y[maxIdx] - x[maxIdx]) <= 8 * Math.abs(d) * 2 ** -10);
    for (let j = 0; j < 32; j++) {
      const i = b * 32 + j;
      assert.ok(Math.abs(y[i] - x[i]) <= Math.abs(d) * 1.001, `elem ${i}: ${y[i]} vs ${x[i]}`);
    }
  }
  let sse = 0;
  for (let i = 0; i < cols; i++) sse += (y[i] - x[i]) ** 2;
  assert.ok(Math.sqrt(sse / cols) < 0.2, 'typical error well under one step of 0.25');
});

test('bytesPerRow follows the ggml block sizes and rejects partial blocks', () => {
  assert.equal(bytesPerRow('f32', 10), 40);
  assert.equal(bytesPerRow('bf16', 10), 20);
  assert.equal(bytesPerRow('q8_0', 64), 68);
  assert.equal(bytesPerRow('q4_0', 64), 36);
  assert.equal(bytesPerRow('q2_k', 512), 168);
  assert.equal(bytesPerRow('q4_k', 256), 144);
  assert.equal(bytesPerRow('q5_k', 256), 176);
  assert.equal(bytesPerRow('q6_k', 256), 210);
  assert.throws(() => bytesPerRow('q4_k', 100), /multiple of 256/);
  assert.throws(() => dequantizeRow('q8_0', new Uint8Array(34), 1, 32, new Float32Array(32)), /beyond/);
});

// tiny_kquant.gguf: `ref.f32.weight` holds 1024 f32 values; each `kq.<TYPE>.weight` is the same 1024
// values quantized by llama.cpp, element for element. Bounds are a little above what llama.cpp's
// quantizers achieve on this data (a layout mistake gives errors of the order of the values, ~2).
test('K-quants decode to the F32 reference of tiny_kquant.gguf', () => {
  const path = join(FIXTURES, 'tiny_kquant.gguf');
  const header = readGgufHeader(path);
  const file = readFileSync(path);
  const bytesOf = (name: string, len: number) => {
    const t = header.tensors.find((x) => x.name === name);
    assert.ok(t, `tensor ${name}`);
    return new Uint8Array(file.buffer, file.byteOffset + t.offset, len);
  };
  const refBytes = bytesOf('ref.f32.weight', 4096);
  const ref = dequantize('f32', refBytes, 1, 1024);
  const cases: Array<{ type: number; dtype: DType; rmse: number; p99: number }> = [
    { type: GGML_TYPE.Q6_K, dtype: 'q6_k', rmse: 0.04, p99: 0.15 },
    { type: GGML_TYPE.Q5_K, dtype: 'q5_k', rmse: 0.06, p99: 0.17 },
    { type: GGML_TYPE.Q4_K, dtype: 'q4_k', rmse: 0.11, p99: 0.34 },
    { type: GGML_TYPE.Q2_K, dtype: 'q2_k', rmse: 0.45, p99: 1.4 },
  ];
  for (const c of cases) {
    const name = `kq.${c.dtype.toUpperCase()}.weight`;
    const info = header.tensors.find((x) => x.name === name);
    assert.equal(info?.ggmlType, c.type);
    const y = dequantize(c.dtype, bytesOf(name, bytesPerRow(c.dtype, 1024)), 1, 1024);
    const errs = Array.from(y, (v, i) => Math.abs(v - ref[i])).sort((a, b) => a - b);
    const rmse = Math.sqrt(errs.reduce((s, e) => s + e * e, 0) / errs.length);
    assert.ok(rmse < c.rmse, `${c.dtype} rmse ${rmse}`);
    assert.ok(errs[Math.floor(errs.length * 0.99)] < c.p99, `${c.dtype} p99 ${errs[1013]}`);
    // Decoding rows of 256 one block at a time gives the same numbers as one 1024-wide row.
    const rowWise = dequantize(c.dtype, bytesOf(name, bytesPerRow(c.dtype, 1024)), 4, 256);
    assert.deepEqual(Array.from(rowWise), Array.from(y));
  }
});
