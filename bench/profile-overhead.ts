// What --profile and --adaptive-sampling cost, measured A/B in one process.
//
//   node dist/bench/profile-overhead.js [--model PATH] [--steps N] [--context N]
//
// --profile: one model (default: the benchmark's qwen3 Q8_0 checkpoint) whose ops switch per
// decode step between the plain ops and the same ops behind withProfile, in ABBA order, so both
// sides see the same machine: on a machine shared with other work, absolute step times move by 2×
// within a minute, and two separate benchmark runs cannot show a difference of a few percent.
// Both sides pay the switch's one extra call per op. Reported: the median step each way, and the
// median of the per-pair relative differences.
//
// --adaptive-sampling: the entropy gate's pass over a real logits row of that model, against the
// sampler's own cost on the row (svc's default filters: min-p 0.08, top-n-sigma 1, temperature 0.7).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ADAPTIVE_ENTROPY_THRESHOLD, adaptiveGreedy, rowEntropy } from '../src/engine/adaptive-sampling.js';
import { allocateKvCache } from '../src/engine/kv-cache.js';
import { OpProfile, withProfile } from '../src/engine/profile.js';
import { createRng, sampleToken } from '../src/engine/sampler.js';
import { defaultOps } from '../src/kernels/index.js';
import type { Ops } from '../src/kernels/ops.js';
import { createModel } from '../src/model/architectures/index.js';
import { loadCheckpoint } from '../src/model/loaders/index.js';

const BLOCK = 16;

function args(): { model: string; steps: number; context: number } {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    model: get('--model') ?? join(homedir(), '.cache', 'svc-bench', 'qwen3-q8_0.gguf'),
    steps: Number(get('--steps') ?? 200),
    context: Number(get('--context') ?? 128),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Ops that call `plain` or `profiled` as `on()` says, with the same indirection either way. */
function switching(plain: Ops, profiled: Ops, on: () => boolean): Ops {
  const pick = () => (on() ? profiled : plain);
  return {
    name: plain.name,
    prepareWeight: (w) => plain.prepareWeight(w),
    matmul: (x, n, w, y, bias) => pick().matmul(x, n, w, y, bias),
    embed: (ids, table, out) => pick().embed(ids, table, out),
    rmsnorm: (x, rows, dim, weight, eps, out) => pick().rmsnorm(x, rows, dim, weight, eps, out),
    rope: (x, n, h, d, positions, theta, style, freqs) => pick().rope(x, n, h, d, positions, theta, style, freqs),
    ropeMulti: (x, n, h, d, positions, sections, theta) => pick().ropeMulti(x, n, h, d, positions, sections, theta),
    siluMul: (gate, up, out, len) => pick().siluMul(gate, up, out, len),
    add: (a, b, out, len) => pick().add(a, b, out, len),
    layerNorm: (x, rows, dim, weight, bias, eps, out) => pick().layerNorm(x, rows, dim, weight, bias, eps, out),
    gelu: (x, out, len, kind) => pick().gelu(x, out, len, kind),
    geluMul: (gate, up, out, len, kind) => pick().geluMul(gate, up, out, len, kind),
    softcap: (x, out, len, cap) => pick().softcap(x, out, len, cap),
    bidirectionalAttention: (q, nq, k, v, nk, h, d, scale, out) => pick().bidirectionalAttention(q, nq, k, v, nk, h, d, scale, out),
    storeKv: (layer, k, v, n, slots) => pick().storeKv(layer, k, v, n, slots),
    attention: (q, layer, seqs, params, out) => pick().attention(q, layer, seqs, params, out),
    storeLatentKv: (layer, latent, n, slots) => pick().storeLatentKv(layer, latent, n, slots),
    mlaAttention: (q, layer, seqs, params, out) => pick().mlaAttention(q, layer, seqs, params, out),
    moe: (x, n, experts, ids, weights, k, out) => pick().moe(x, n, experts, ids, weights, k, out),
    causalConv1d: (x, channels, kernel, weight, seqs, state, out, bias) =>
      pick().causalConv1d(x, channels, kernel, weight, seqs, state, out, bias),
    ssdScan: (x, dt, b, c, seqs, params, state, out) => pick().ssdScan(x, dt, b, c, seqs, params, state, out),
    gatedDeltaRule: (q, k, v, g, beta, seqs, params, state, out) => pick().gatedDeltaRule(q, k, v, g, beta, seqs, params, state, out),
  };
}

function main(): void {
  const { model: path, steps, context } = args();
  if (!existsSync(path)) throw new Error(`${path} does not exist (npm run bench generates it; or pass --model)`);
  const plain = defaultOps();
  const profile = new OpProfile();
  let on = false;
  const model = createModel(
    loadCheckpoint(path, { fastLoad: true }),
    switching(plain, withProfile(plain, profile), () => on),
  );
  const config = model.config;
  const capacity = context + 64;
  const blocks = Math.ceil(capacity / BLOCK);
  const kv = allocateKvCache(
    config,
    blocks,
    BLOCK,
    Array.from({ length: config.numLayers }, () => ({ k: 'bf16' as const, v: 'bf16' as const })),
  );
  const table = Int32Array.from({ length: blocks }, (_, i) => i);
  const forward = (tokens: number[], start: number): Float32Array => {
    const n = tokens.length;
    const positions = Int32Array.from({ length: n }, (_, i) => start + i);
    const kvLen = start + n;
    return model.forward(
      {
        tokens: Int32Array.from(tokens),
        positions,
        slots: positions,
        seqs: [{ qStart: 0, qLen: n, kvLen, blockTable: table.subarray(0, Math.ceil(kvLen / BLOCK)) }],
        logitRows: Int32Array.from([n - 1]),
      },
      kv,
    );
  };

  forward(
    Array.from({ length: context }, (_, i) => (i * 7919) % config.vocabSize),
    0,
  );
  // Decode steps at positions context … context + 63, over and over (the KV length stays bounded).
  const times = { on: [] as number[], off: [] as number[] };
  const pairs: number[] = [];
  let logits: Float32Array = new Float32Array(0);
  for (let i = 0; i < 8; i++) forward([i + 1], context + i); // warm-up
  for (let i = 0; i < steps; i += 2) {
    const order = (i / 2) % 2 === 0 ? [true, false] : [false, true];
    const pair: Record<string, number> = {};
    order.forEach((side, j) => {
      on = side;
      const t0 = performance.now();
      logits = forward([(i + j) % 1000], context + ((i + j) % 64));
      const ms = performance.now() - t0;
      (side ? times.on : times.off).push(ms);
      pair[String(side)] = ms;
    });
    pairs.push((pair.true! - pair.false!) / pair.false!);
  }
  const calls = profile.snapshot().ops.reduce((n, r) => n + r.calls, 0) / times.on.length;
  process.stdout.write(
    `--profile on ${path}: ${times.on.length} decode steps each way, ${calls.toFixed(0)} op calls per step\n` +
      `  median step: ${median(times.off).toFixed(2)} ms plain, ${median(times.on).toFixed(2)} ms profiled; ` +
      `median per-pair difference ${(100 * median(pairs)).toFixed(2)}%\n`,
  );

  // The adaptive gate against the sampler, on the last decode row.
  const row = logits.slice(0, config.vocabSize);
  const p = { temperature: 0.7, topK: 0, topP: 1, minP: 0.08, topNSigma: 1, seed: 1 };
  const rng = createRng(1);
  const timeIt = (f: () => void) => {
    for (let i = 0; i < 20; i++) f();
    const xs: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      f();
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  // The same row made confident: its argmax raised until the entropy is below the threshold.
  const confident = row.slice();
  const top = rowEntropy(row, p.temperature)!.argmax;
  while (rowEntropy(confident, p.temperature)!.entropy >= ADAPTIVE_ENTROPY_THRESHOLD) confident[top] += 0.5;
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  const entropy = (r: Float32Array) => rowEntropy(r, p.temperature)!.entropy.toFixed(3);
  process.stdout.write(
    `--adaptive-sampling, per row of ${row.length}, T ${p.temperature}: ` +
      `the model's row (${entropy(row)} nats): gate ${us(timeIt(() => void adaptiveGreedy(row, p)))} (not gated), sampleToken ${us(timeIt(() => void sampleToken(row, p, rng)))}; ` +
      `made confident (${entropy(confident)} nats): gate ${us(timeIt(() => void adaptiveGreedy(confident, p)))} (gated: no sampleToken; it would take ${us(timeIt(() => void sampleToken(confident, p, rng)))}); ` +
      `decode step ${median(times.off).toFixed(1)} ms\n`,
  );
}

main();
