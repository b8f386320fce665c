// The native moe op (native/moe.cc, one call per layer step) against the composition it replaced
// (kept below as `composedMoe`: per expert a JS gather of its rows, three native matmuls, the native
// siluMul and a JS scatter-add), on one Qwen3-30B-A3B-like layer: hidden 2048, moe_intermediate
// 768, 128 experts, top-8, weights random blocks (the bytes, not their values, set the speed).
//
//   node dist/bench/moe-op.js [--dtypes q8_0,q4_k] [--n 1,8,128] [--experts 128] [--k 8] [--reps N]
//
// Each rep routes every row to k distinct experts drawn afresh, so decode reads weights from
// memory as a model does (128 experts are ~0.35-0.65 GB, past any cache), and runs both versions
// on the same routing, alternating which goes first, so a busy machine skews both alike. Reported:
// the median time per call of each, the speed-up, and for n = 1 the active experts' weight bytes
// (k experts x gate + up + down, as prepared) per second of the new op.
import { nativeInfo, nativeOps } from '../src/kernels/native.js';
import type { DType } from '../src/kernels/dtypes.js';
import type { MoeExperts, Ops, WeightMatrix } from '../src/kernels/ops.js';
import { randomWeight } from './random-weights.js';

const HIDDEN = 2048;
const INTER = 768;

function args(): { dtypes: DType[]; ns: number[]; experts: number; k: number; reps: number | null } {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const reps = get('--reps');
  return {
    dtypes: (get('--dtypes') ?? 'q8_0,q4_k').split(',') as DType[],
    ns: (get('--n') ?? '1,8,128').split(',').map(Number),
    experts: Number(get('--experts') ?? 128),
    k: Number(get('--k') ?? 8),
    reps: reps === undefined ? null : Number(reps),
  };
}

// ---- the composition the native op replaced (src/kernels/native.ts before moe.cc) ----

const scratch = {
  rows: new Int32Array(64),
  scales: new Float32Array(64),
  x: new Float32Array(0) as Float32Array,
  g: new Float32Array(0) as Float32Array,
  u: new Float32Array(0) as Float32Array,
  y: new Float32Array(0) as Float32Array,
};

const grow = (a: Float32Array, len: number) => (a.length >= len ? a : new Float32Array(Math.max(len, a.length * 2)));

function composedMoe(
  ops: Ops,
  x: Float32Array,
  n: number,
  experts: MoeExperts,
  ids: Int32Array,
  weights: Float32Array,
  k: number,
  out: Float32Array,
): void {
  const hidden = experts.gate.find((g) => g !== null)!.cols;
  out.fill(0, 0, n * hidden);
  const s = scratch;
  if (s.rows.length < n) {
    s.rows = new Int32Array(n * 2);
    s.scales = new Float32Array(n * 2);
  }
  for (let e = 0; e < experts.gate.length; e++) {
    const gate = experts.gate[e],
      up = experts.up[e],
      down = experts.down[e];
    if (gate === null || up === null || down === null) continue;
    let m = 0;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < k; j++)
        if (ids[i * k + j] === e) {
          s.rows[m] = i;
          s.scales[m++] = weights[i * k + j]!;
        }
    if (m === 0) continue;
    const inter = gate.rows;
    s.x = grow(s.x, m * hidden);
    s.g = grow(s.g, m * inter);
    s.u = grow(s.u, m * inter);
    s.y = grow(s.y, m * hidden);
    for (let r = 0; r < m; r++) s.x.set(x.subarray(s.rows[r]! * hidden, (s.rows[r]! + 1) * hidden), r * hidden);
    const xs = s.x.subarray(0, m * hidden),
      g = s.g.subarray(0, m * inter),
      u = s.u.subarray(0, m * inter),
      y = s.y.subarray(0, m * hidden);
    ops.matmul(xs, m, gate, g);
    ops.matmul(xs, m, up, u);
    ops.siluMul(g, u, g, m * inter);
    ops.matmul(g, m, down, y);
    for (let r = 0; r < m; r++) {
      const base = s.rows[r]! * hidden,
        w = s.scales[r]!;
      for (let h = 0; h < hidden; h++) out[base + h] += w * y[r * hidden + h]!;
    }
  }
}

// ---- the measurement ----

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** n rows, each routed to k distinct experts; weights as a softmax's top-k would give them (positive). */
function route(n: number, k: number, experts: number): { ids: Int32Array; weights: Float32Array } {
  const ids = new Int32Array(n * k),
    weights = new Float32Array(n * k);
  for (let i = 0; i < n; i++) {
    const picked = new Set<number>();
    while (picked.size < k) picked.add(Math.floor(Math.random() * experts));
    let j = 0;
    for (const e of picked) {
      ids[i * k + j] = e;
      weights[i * k + j++] = 0.05 + Math.random() * 0.2;
    }
  }
  return { ids, weights };
}

function main(): void {
  const { dtypes, ns, experts: numExperts, k, reps } = args();
  const info = nativeInfo();
  console.log(
    `moe op: hidden ${HIDDEN}, moe_intermediate ${INTER}, ${numExperts} experts, top-${k}; ${info.cpuPath} path, ${info.threads} threads`,
  );
  console.log('dtype   n     native ms   composed ms   speed-up   n=1 active-weight GB/s');
  for (const dtype of dtypes) {
    const t0 = performance.now();
    const experts = { gate: [] as WeightMatrix[], up: [] as WeightMatrix[], down: [] as WeightMatrix[] };
    for (let e = 0; e < numExperts; e++) {
      experts.gate.push(randomWeight(dtype, INTER, HIDDEN));
      experts.up.push(randomWeight(dtype, INTER, HIDDEN));
      experts.down.push(randomWeight(dtype, HIDDEN, INTER));
    }
    const expertBytes = experts.gate[0]!.data.byteLength + experts.up[0]!.data.byteLength + experts.down[0]!.data.byteLength;
    process.stderr.write(
      `${dtype}: ${numExperts} experts, ${((expertBytes * numExperts) / 2 ** 30).toFixed(2)} GiB prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    for (const n of ns) {
      const x = new Float32Array(n * HIDDEN).map(() => Math.random() * 2 - 1);
      const outA = new Float32Array(n * HIDDEN),
        outB = new Float32Array(n * HIDDEN);
      const count = reps ?? (n === 1 ? 60 : n <= 8 ? 30 : 6);
      const native: number[] = [],
        composed: number[] = [];
      for (let r = -2; r < count; r++) {
        const { ids, weights } = route(n, k, numExperts);
        const runNative = () => {
          const t = performance.now();
          nativeOps.moe(x, n, experts, ids, weights, k, outA);
          return performance.now() - t;
        };
        const runComposed = () => {
          const t = performance.now();
          composedMoe(nativeOps, x, n, experts, ids, weights, k, outB);
          return performance.now() - t;
        };
        let a: number, b: number;
        if (r % 2 === 0) {
          a = runNative();
          b = runComposed();
        } else {
          b = runComposed();
          a = runNative();
        }
        if (r >= 0) {
          native.push(a);
          composed.push(b);
        }
      }
      const mn = median(native),
        mc = median(composed);
      const gbs = n === 1 ? ((k * expertBytes) / (mn / 1000) / 1e9).toFixed(1) : '';
      console.log(
        `${dtype.padEnd(6)} ${String(n).padStart(3)}   ${mn.toFixed(3).padStart(9)}   ${mc.toFixed(3).padStart(11)}   ${(mc / mn).toFixed(2).padStart(7)}x   ${gbs}`,
      );
    }
  }
}

main();
