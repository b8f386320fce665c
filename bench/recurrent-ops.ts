// The recurrences of hybrid models' prefill, token by token against the chunked form (native/gated_delta.cc,
// native/ssd_scan.cc; setChunkedRecurrence picks the form): gatedDeltaRule at the bench's Qwen3.5 shape
// (bench/shapes.ts qwen35: 16 key / 16 value heads of 128) and ssdScan at a Mamba2-130m-like layer (24
// heads of 64, d_state 128, one group), one sequence of --tokens rows per call from a random state.
//
//   node dist/bench/recurrent-ops.js [--tokens 2048,512,64,16] [--reps N] [--threads N]
//
// Each rep runs both forms on the same inputs, alternating which goes first, so a busy machine skews both
// alike. Reported per op and length: the median time per call of each form (one layer), tokens per
// second, the speed-up, and the largest difference between the two forms' outputs and final states.
import { nativeInfo, nativeOps, setChunkedRecurrence, setNumThreads } from '../src/kernels/native.js';
import type { GatedDeltaParams, RecurrentSeq, SsdParams } from '../src/kernels/ops.js';
import { log, parseFlags, positiveInt, threadCount } from './harness.js';
import { shapeOf } from './shapes.js';

const USAGE = 'usage: node dist/bench/recurrent-ops.js [--tokens 2048,512,64,16] [--reps N] [--threads N]';

/** Uniform in [-amp, amp), from a fixed-seed generator (mulberry32). */
function randoms(seed: number): (n: number, amp?: number) => Float32Array {
  let s = seed >>> 0;
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (n, amp = 1) => Float32Array.from({ length: n }, () => (next() * 2 - 1) * amp);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** One op call on fresh copies of the state: its time (ms), output and final state. */
type Call = (state: Float32Array, out: Float32Array) => void;

function compare(label: string, tokens: number, reps: number, call: Call, state0: Float32Array, outLen: number): void {
  const times: Record<'recurrent' | 'chunked', number[]> = { recurrent: [], chunked: [] };
  const last: Record<string, { state: Float32Array; out: Float32Array }> = {};
  for (let r = 0; r < reps + 1; r++) {
    const order = r % 2 === 0 ? (['recurrent', 'chunked'] as const) : (['chunked', 'recurrent'] as const);
    for (const form of order) {
      setChunkedRecurrence(form === 'chunked' ? 0 : Infinity);
      const state = state0.slice();
      const out = new Float32Array(outLen);
      const t0 = performance.now();
      call(state, out);
      const ms = performance.now() - t0;
      if (r > 0) times[form].push(ms); // the first rep warms caches and scratch
      last[form] = { state, out };
    }
  }
  const [rec, chk] = [median(times.recurrent), median(times.chunked)];
  const tps = (ms: number): string => `${Math.round((tokens / ms) * 1000)} tok/s`;
  console.log(
    `${label} ${String(tokens).padStart(5)} tokens: recurrent ${rec.toFixed(2)} ms (${tps(rec)}), chunked ${chk.toFixed(2)} ms ` +
      `(${tps(chk)}), x${(rec / chk).toFixed(2)}; max |diff| out ${maxDiff(last.recurrent.out, last.chunked.out).toExponential(1)}, ` +
      `state ${maxDiff(last.recurrent.state, last.chunked.state).toExponential(1)}`,
  );
}

function main(): void {
  const { flags } = parseFlags(process.argv.slice(2), ['--tokens', '--reps', '--threads'], [], USAGE);
  const lengths = (flags.get('--tokens') ?? '2048,512,64,16').split(',').map((t) => positiveInt(t, '--tokens'));
  const reps = positiveInt(flags.get('--reps') ?? '7', '--reps');
  const threads = threadCount(flags.get('--threads'));
  setNumThreads(threads);
  log(`recurrent-ops: ${nativeInfo().cpuPath}, ${threads} threads, ${reps} reps`);
  const hybrid = shapeOf('qwen35', false).hybrid!;
  const gdn: GatedDeltaParams = {
    numKHeads: hybrid.linearNumKeyHeads,
    numVHeads: hybrid.linearNumValueHeads,
    kDim: hybrid.linearKeyHeadDim,
    vDim: hybrid.linearValueHeadDim,
    l2norm: true,
  };
  const rand = randoms(7);
  for (const T of lengths) {
    const seqs: RecurrentSeq[] = [{ qStart: 0, qLen: T, slot: 0 }];
    const { numKHeads: nk, numVHeads: nv, kDim: K, vDim: V } = gdn;
    const q = rand(T * nk * K),
      k = rand(T * nk * K),
      v = rand(T * nv * V);
    const g = rand(T * nv).map((x) => -0.05 - 0.5 * Math.abs(x));
    const beta = rand(T * nv).map((x) => 1 / (1 + Math.exp(-2 * x)));
    const call: Call = (state, out) => nativeOps.gatedDeltaRule(q, k, v, g, beta, seqs, gdn, state, out);
    compare(`gatedDeltaRule [${nk}/${nv} heads, ${K}x${V}]`, T, reps, call, rand(nv * K * V, 0.1), T * nv * V);
  }
  const ssd: SsdParams = {
    numHeads: 24,
    headDim: 64,
    stateSize: 128,
    nGroups: 1,
    a: rand(24).map((x) => -Math.exp(x)),
    d: rand(24),
    dtBias: rand(24).map((x) => x - 3),
    dtMin: 0,
    dtMax: Infinity,
  };
  for (const T of lengths) {
    const seqs: RecurrentSeq[] = [{ qStart: 0, qLen: T, slot: 0 }];
    const { numHeads: H, headDim: P, stateSize: N, nGroups: G } = ssd;
    const x = rand(T * H * P),
      dt = rand(T * H, 2),
      b = rand(T * G * N),
      c = rand(T * G * N);
    const call: Call = (state, out) => nativeOps.ssdScan(x, dt, b, c, seqs, ssd, state, out);
    compare(`ssdScan [${H} heads, ${P}x${N}, ${G} group]`, T, reps, call, rand(H * P * N, 0.1), T * H * P);
  }
}

main();
