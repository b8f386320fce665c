// Decode matvec speed (n = 1 activation row) of the native matmul per weight dtype and shape, against
// the bandwidth roofline: what a decode step's matmuls can reach with nothing else in the way.
//
//   node dist/bench/matmul-op.js [--dtypes q8_0,q4_0,q4_k,q5_k,q6_k] [--shapes llama|qwen3|RxC,...]
//                                [--mib 512] [--reps 5] [--n 1]
//
// Each shape gets enough copies of a random matrix (random blocks with small finite scales: the
// bytes, not their values, set the speed) to fill --mib MiB, prepared (packed) as a model's are, so
// every pass streams from memory as decode does. A pass multiplies the same activation row by every
// copy in turn; reported: the best pass's GB/s of weight bytes and µs per matrix, next to the
// measured read bandwidth (native/bandwidth.cc).
import { measureNativeReadBandwidth, nativeInfo, nativeOps } from '../src/kernels/native.js';
import type { DType } from '../src/kernels/dtypes.js';
import { randomWeight } from './random-weights.js';

/** The matrices of one decoder layer plus the tied LM head, as [rows, cols]. */
const SHAPES: Record<string, [number, number][]> = {
  llama: [
    [2048, 2048],
    [512, 2048],
    [8192, 2048],
    [2048, 8192],
    [151936, 2048],
  ],
  qwen3: [
    [2048, 1024],
    [1024, 1024],
    [1024, 2048],
    [3072, 1024],
    [1024, 3072],
    [151936, 1024],
  ],
};

function args() {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const shapes = (get('--shapes') ?? 'llama').split(',').flatMap((s): [number, number][] => {
    const named = SHAPES[s];
    if (named) return named;
    const m = /^(\d+)x(\d+)$/.exec(s);
    if (!m) throw new Error(`matmul-op bench: --shapes takes llama, qwen3 or ROWSxCOLS, got ${s}`);
    return [[Number(m[1]), Number(m[2])]];
  });
  return {
    dtypes: (get('--dtypes') ?? 'q8_0,q4_0,q4_k,q5_k,q6_k').split(',') as DType[],
    shapes,
    mib: Number(get('--mib') ?? 512),
    reps: Number(get('--reps') ?? 5),
    n: Number(get('--n') ?? 1),
  };
}

function main(): void {
  const { dtypes, shapes, mib, reps, n } = args();
  const info = nativeInfo();
  const bw = measureNativeReadBandwidth(1 << 30, 5);
  console.log(`matmul op, n = ${n}: ${info.cpuPath} path, ${info.threads} threads; read bandwidth ${bw.gbPerS.toFixed(1)} GB/s`);
  console.log('dtype    shape            copies   µs/matrix    GB/s   of roofline');
  for (const dtype of dtypes) {
    for (const [rows, cols] of shapes) {
      const one = randomWeight(dtype, rows, cols);
      const bytes = one.data.byteLength;
      const copies = Math.max(1, Math.ceil((mib * 2 ** 20) / bytes));
      const ws = [one];
      for (let c = 1; c < copies; c++) ws.push(randomWeight(dtype, rows, cols));
      const x = new Float32Array(n * cols).map(() => Math.random() * 2 - 1);
      const y = new Float32Array(n * rows);
      let best = Infinity;
      for (let r = -1; r < reps; r++) {
        const t = performance.now();
        for (const w of ws) nativeOps.matmul(x, n, w, y);
        const ms = performance.now() - t;
        if (r >= 0) best = Math.min(best, ms);
      }
      const gbs = (bytes * copies) / (best / 1000) / 1e9;
      console.log(
        `${dtype.padEnd(8)} ${`${rows}x${cols}`.padEnd(16)} ${String(copies).padStart(6)}   ${((best * 1000) / copies).toFixed(1).padStart(9)}   ${gbs.toFixed(1).padStart(5)}   ${((100 * gbs) / bw.gbPerS).toFixed(0).padStart(5)}%`,
      );
    }
  }
}

main();
