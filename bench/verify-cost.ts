// The cost of one speculative verify step of K tokens against one plain decode step, on the bench
// checkpoints: the same model, one sequence with a context of --context tokens, the forward pass of
// 1 row and of K rows timed in alternation (median of --reps). Decode is memory-bound, so K rows
// cost little more than one while the weights dominate; with a drafter that makes a verify step
// yield T tokens on average, the decode speedup is T ÷ (verify cost ÷ decode cost).
//
//   node dist/bench/verify-cost.js [--models qwen3,llama] [--formats q8_0,q4_k_m] [--ks 2,3,5,8]
//                                   [--context 256] [--reps 15] [--paths CKPT,…  (instead of the bench checkpoints)]
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultOps } from '../src/kernels/index.js';
import { loadCheckpoint } from '../src/model/loaders/index.js';
import { createModel, type ForwardBatch, type Model } from '../src/model/architectures/index.js';
import { allocateKvCache } from '../src/engine/kv-cache.js';
import type { KvLayer } from '../src/kernels/ops.js';
import { ensureCheckpoint } from './gen-checkpoints.js';

const BLOCK = 16;

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

/** A forward batch of `rows` tokens at positions [from, from + rows) of the one sequence. */
function batchAt(from: number, rows: number, vocab: number, logitRows: 'last' | 'all'): ForwardBatch {
  const tokens = new Int32Array(rows);
  const positions = new Int32Array(rows);
  const slots = new Int32Array(rows);
  for (let i = 0; i < rows; i++) {
    tokens[i] = (from + i) % vocab;
    positions[i] = from + i;
    slots[i] = from + i; // block table 0, 1, 2, … : slot = position
  }
  const kvLen = from + rows;
  const blockTable = Int32Array.from({ length: Math.ceil(kvLen / BLOCK) }, (_, b) => b);
  return {
    tokens,
    positions,
    slots,
    seqs: [{ qStart: 0, qLen: rows, kvLen, blockTable }],
    logitRows: logitRows === 'all' ? Int32Array.from({ length: rows }, (_, i) => i) : Int32Array.of(rows - 1),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function timeStep(model: Model, kv: KvLayer[], batch: ForwardBatch): number {
  const t0 = performance.now();
  model.forward(batch, kv);
  return performance.now() - t0;
}

export function measure(path: string, ks: number[], context: number, reps: number): { k: number; ms: number; ratio: number }[] {
  const checkpoint = loadCheckpoint(path, { fastLoad: true });
  const model = createModel(checkpoint, defaultOps());
  const c = checkpoint.config;
  const maxK = Math.max(...ks);
  const kv = allocateKvCache(c, Math.ceil((context + maxK) / BLOCK) + 1, BLOCK, 'bf16');
  // The context, prefilled once.
  model.forward(batchAt(0, context, c.vocabSize, 'last'), kv);
  const times = new Map<number, number[]>([[1, []], ...ks.map((k): [number, number[]] => [k, []])]);
  const all = [1, ...ks];
  for (let r = 0; r < reps + 2; r++) {
    for (const k of all) {
      const ms = timeStep(model, kv, batchAt(context, k, c.vocabSize, 'all'));
      if (r >= 2) times.get(k)!.push(ms); // two warm-up rounds
    }
  }
  const decode = median(times.get(1)!);
  return all.map((k) => ({ k, ms: median(times.get(k)!), ratio: median(times.get(k)!) / decode }));
}

function main(): void {
  const models = arg('models', 'qwen3').split(',');
  const formats = arg('formats', 'q8_0,q4_k_m').split(',');
  const ks = arg('ks', '2,3,5,8').split(',').map(Number);
  const context = Number(arg('context', '256'));
  const reps = Number(arg('reps', '15'));
  console.log(`| checkpoint | K | step ms | × decode step |`);
  console.log(`|---|---|---|---|`);
  const paths = arg('paths', '');
  const checkpoints = paths
    ? paths.split(',').map((path) => ({ id: basename(path), path }))
    : models.flatMap((m) => formats.map((f) => ensureCheckpoint(`${m}-${f}`)));
  for (const { id, path } of checkpoints) {
    for (const row of measure(path, ks, context, reps))
      console.log(`| ${id} | ${row.k} | ${row.ms.toFixed(2)} | ${row.ratio.toFixed(2)} |`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) main();
