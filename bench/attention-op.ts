// Attention op at depth: the native paged attention alone (no model), on the Qwen3-0.6B attention
// shape by default, so kernel changes can be measured without the rest of a forward pass.
//
//   node dist/bench/attention-op.js [--depths 512,4096,16384,32768] [--dtypes fp8,bf16] [--chunk 512]
//                                   [--heads 16] [--kv-heads 8] [--head-dim 128] [--reps 3] [--cold]
//
// --cold evicts the caches before every timed call (a forward pass reads each layer's KV after
// megabytes of weights, so a served decode finds its KV in memory, not in L2/L3).
// Per depth D and KV dtype it times one prefill chunk (the last `chunk` query rows of a D-token prompt)
// and one decode step (one query row at D), best of --reps, and prints GFLOP/s counting the two
// matrix products (4 · heads · headDim flops per attended query-key pair).
import { nativeOps, setNumThreads } from '../src/kernels/index.js';
import { KV_DTYPES, type KvDType } from '../src/kernels/dtypes.js';
import type { AttentionSeq, KvLayer } from '../src/kernels/ops.js';
import { parseFlags } from './harness.js';

const USAGE =
  'usage: node dist/bench/attention-op.js [--depths 512,4096,16384,32768] [--dtypes fp8,bf16] [--chunk 512] ' +
  '[--heads 16] [--kv-heads 8] [--head-dim 128] [--reps 3] [--cold]';

const BLOCK_SIZE = 16;

function list(value: string | undefined, fallback: string): string[] {
  return (value ?? fallback).split(',').filter((s) => s !== '');
}

// Larger than any L3 here; summed (not just touched) so the reads cannot be skipped.
const evictBuffer = new Float64Array(64 << 17);
let evictSink = 0;
function evictCaches(): void {
  let s = 0;
  for (let i = 0; i < evictBuffer.length; i += 8) s += evictBuffer[i]!;
  evictSink += s;
}

function bestMs(reps: number, cold: boolean, run: () => void): number {
  let best = Infinity;
  for (let r = 0; r < reps; r++) {
    if (cold) evictCaches();
    const t0 = performance.now();
    run();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

function main(): void {
  const known = ['--depths', '--dtypes', '--chunk', '--heads', '--kv-heads', '--head-dim', '--reps'];
  const { flags, switches } = parseFlags(process.argv.slice(2), known, ['--cold'], USAGE);
  const cold = switches.has('--cold');
  const depths = list(flags.get('--depths'), '512,4096,16384,32768').map(Number);
  const dtypes = list(flags.get('--dtypes'), 'fp8,bf16') as KvDType[];
  const chunk = Number(flags.get('--chunk') ?? 512);
  const numHeads = Number(flags.get('--heads') ?? 16);
  const numKvHeads = Number(flags.get('--kv-heads') ?? 8);
  const headDim = Number(flags.get('--head-dim') ?? 128);
  const reps = Number(flags.get('--reps') ?? 3);
  for (const dtype of dtypes) if (!(dtype in KV_DTYPES)) throw new Error(`unknown KV dtype ${dtype}`);
  setNumThreads(Number(process.env.SVC_THREADS ?? 2));

  console.log(
    `attention op: ${numHeads} heads / ${numKvHeads} KV heads × ${headDim}, block ${BLOCK_SIZE}, chunk ${chunk}${cold ? ', caches evicted before each call' : ''}`,
  );
  console.log('| KV | depth | prefill chunk ms | prefill GFLOP/s | decode ms | decode GFLOP/s |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const dtype of dtypes) {
    for (const depth of depths) {
      const numBlocks = Math.ceil(depth / BLOCK_SIZE);
      const rows = numBlocks * BLOCK_SIZE * numKvHeads;
      const rowBytes = KV_DTYPES[dtype].rowBytes(headDim);
      const layer: KvLayer = {
        kDtype: dtype,
        vDtype: dtype,
        numBlocks,
        blockSize: BLOCK_SIZE,
        numKvHeads,
        headDim,
        k: new Uint8Array(rows * rowBytes),
        v: new Uint8Array(rows * rowBytes),
        kScale: 1,
        vScale: 1,
      };
      const width = numKvHeads * headDim;
      const blockTable = Int32Array.from({ length: numBlocks }, (_, i) => i);
      // Fill the cache through storeKv, in pieces so the f32 staging stays small.
      const piece = 1024;
      for (let t0 = 0; t0 < depth; t0 += piece) {
        const n = Math.min(piece, depth - t0);
        const kv = Float32Array.from({ length: n * width }, () => Math.random() * 2 - 1);
        const slots = Int32Array.from({ length: n }, (_, i) => t0 + i);
        nativeOps.storeKv(layer, kv, kv, n, slots);
      }
      const params = { numHeads, scale: 1 / Math.sqrt(headDim), slidingWindow: null };
      const q = Float32Array.from({ length: chunk * numHeads * headDim }, () => Math.random() * 2 - 1);
      const out = new Float32Array(q.length);
      const qLen = Math.min(chunk, depth);
      const prefill: AttentionSeq[] = [{ qStart: 0, qLen, kvLen: depth, blockTable }];
      const decode: AttentionSeq[] = [{ qStart: 0, qLen: 1, kvLen: depth, blockTable }];
      const prefillMs = bestMs(reps, cold, () => nativeOps.attention(q, layer, prefill, params, out));
      const decodeMs = bestMs(reps * 4, cold, () => nativeOps.attention(q, layer, decode, params, out));
      // Pairs attended by the chunk: rows see depth - qLen + 1 … depth keys.
      const pairs = qLen * (depth - qLen) + (qLen * (qLen + 1)) / 2;
      const flop = (n: number) => 4 * numHeads * headDim * n;
      const gflops = (n: number, ms: number) => (flop(n) / (ms * 1e6)).toFixed(1);
      console.log(
        `| ${dtype} | ${depth} | ${prefillMs.toFixed(2)} | ${gflops(pairs, prefillMs)} | ${decodeMs.toFixed(3)} | ${gflops(depth, decodeMs)} |`,
      );
    }
  }
}

main();
if (evictSink === 42) console.log('');
