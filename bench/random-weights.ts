// Random weight matrices for the op benchmarks (bench/matmul-op.ts, bench/moe-op.ts): random blocks
// whose f16 scales are kept small and finite, prepared (packed) for the native ops.
import { randomFillSync } from 'node:crypto';
import { nativeOps } from '../src/kernels/native.js';
import { f32ToF16 } from '../src/kernels/dequant.js';
import { WEIGHT_DTYPES, type DType } from '../src/kernels/dtypes.js';
import type { WeightMatrix } from '../src/kernels/ops.js';

/** Where each block's f16 scales sit (any other bytes are valid). */
const SCALES: Partial<Record<DType, number[]>> = {
  q8_0: [0],
  q4_0: [0],
  q4_1: [0, 2],
  q5_0: [0],
  q5_1: [0, 2],
  iq4_nl: [0],
  q4_k: [0, 2],
  q5_k: [0, 2],
  q6_k: [208],
  iq4_xs: [0],
};

/** The dtypes randomWeight can make. */
export const RANDOM_WEIGHT_DTYPES = Object.keys(SCALES) as DType[];

/** A [rows, cols] matrix of random blocks, prepared for the native ops. */
export function randomWeight(dtype: DType, rows: number, cols: number): WeightMatrix {
  const { blockElements, blockBytes } = WEIGHT_DTYPES[dtype];
  const at = SCALES[dtype];
  if (at === undefined) throw new Error(`no random-block recipe for ${dtype} (have ${RANDOM_WEIGHT_DTYPES.join(', ')})`);
  const data = randomFillSync(new Uint8Array(rows * (cols / blockElements) * blockBytes));
  for (let p = 0; p < data.length; p += blockBytes)
    for (const o of at) {
      const h = f32ToF16(0.001 + (data[p + o]! * 0.004) / 255);
      data[p + o] = h & 0xff;
      data[p + o + 1] = h >> 8;
    }
  return nativeOps.prepareWeight({ dtype, rows, cols, data });
}
