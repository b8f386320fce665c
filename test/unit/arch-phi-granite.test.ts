// Phi-3 (fused qkv / gate_up, partial rotary, sliding window, LongRoPE) and Granite (dense, MoE,
// MoE with a shared expert) against Hugging Face's float64 logits (arch-fixtures/neural-api-*):
// each sequence's prefill on the reference and native ops; the paged path (prefill chunk → chunk →
// token-by-token decode, two sequences per batch, non-contiguous blocks); config parsing; rope with
// RopeFrequencies (native against reference on every CPU path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { PagedRun, readReferenceLogits, type ReferenceLogits } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import type { Ops, RopeFrequencies } from '../../src/kernels/ops.js';
import { architectureForGguf, createModel, type Model } from '../../src/model/architectures/index.js';
import { DecoderTransformer } from '../../src/model/architectures/decoder.js';
import { longRopeInvFreq, longRopeRows } from '../../src/model/architectures/rotary.js';
import { phi3 } from '../../src/model/architectures/phi3.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { configFromGguf, configFromHf } from '../../src/model/model-config.js';
import type { Checkpoint } from '../../src/model/types.js';

const ARCH_FIXTURES = resolve(MODELS, 'arch-fixtures');

function fixtureDir(name: string): string {
  return resolve(ARCH_FIXTURES, `neural-api-${name}`);
}

function loadFixture(name: string): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(fixtureDir(name), `tiny_${name}.safetensors`)],
    configPath: resolve(fixtureDir(name), `tiny_${name}_config.json`),
    fastLoad: true,
  });
}

const referenceOf = (name: string): ReferenceLogits => readReferenceLogits(resolve(fixtureDir(name), `tiny_${name}_logits.json`));

/** Max |ours − reference| over the rows given, relative to the largest |reference logit| of the fixture. */
function relativeError(ours: Float32Array, vocab: number, rows: { s: number; pos: number }[], ref: ReferenceLogits): number {
  let scale = 0;
  for (const seq of ref.logits) for (const row of seq) for (const v of row) scale = Math.max(scale, Math.abs(v));
  let err = 0;
  rows.forEach(({ s, pos }, r) => {
    for (let v = 0; v < vocab; v++) err = Math.max(err, Math.abs(ours[r * vocab + v] - ref.logits[s][pos][v]));
  });
  return err / scale;
}

/** Each sequence alone, whole, in one step: its logits at every position. */
function prefillError(model: Model, ref: ReferenceLogits): number {
  const vocab = model.config.vocabSize;
  let err = 0;
  ref.sequences.forEach((tokens, s) => {
    const logits = new PagedRun(model, [tokens.length], 4).step([{ seq: 0, tokens }], true);
    err = Math.max(
      err,
      relativeError(
        logits,
        vocab,
        tokens.map((_, pos) => ({ s, pos })),
        ref,
      ),
    );
  });
  return err;
}

/**
 * Sequences 0 and 1 of the fixture in one paged cache (blocks of 4, interleaved and reversed): a
 * prefill chunk of `first` tokens each (one batch), a second chunk of 3 tokens each, then one token
 * per sequence per step to the end. Every row's logits against the reference.
 */
function pagedError(model: Model, ref: ReferenceLogits, first: number): number {
  const vocab = model.config.vocabSize;
  const seqs = [ref.sequences[0], ref.sequences[1].slice(0, -1)]; // lengths differ by one
  const run = new PagedRun(model, [seqs[0].length, seqs[1].length], 4);
  let err = 0;
  const step = (from: number, to: number) => {
    const chunks = seqs.map((tokens, seq) => ({ seq, tokens: tokens.slice(from, to) })).filter((c) => c.tokens.length > 0);
    const logits = run.step(chunks, true);
    const rows = chunks.flatMap((c) => c.tokens.map((_, j) => ({ s: c.seq, pos: from + j })));
    err = Math.max(err, relativeError(logits, vocab, rows, ref));
  };
  step(0, first);
  step(first, first + 3);
  for (let pos = first + 3; pos < seqs[0].length; pos++) step(pos, pos + 1);
  return err;
}

// Relative tolerances (max |error| / max |reference logit|): the references are float64 and the
// weights f32, so only svc's f32 activations differ (about 1e-6 measured on the reference ops); the
// native kernels sum in another order (FMA, SIMD lanes).
const CASES: { name: string; arch: string; label: string }[] = [
  { name: 'phi3', arch: 'phi3', label: 'phi3 (fused qkv / gate_up, partial rotary 0.75, sliding window 4)' },
  { name: 'phi3_longrope', arch: 'phi3', label: 'phi3 LongRoPE (partial rotary 0.75, long factors at 16 > 8 positions)' },
  { name: 'phi3_longrope_full', arch: 'phi3', label: 'phi3 LongRoPE (full rotary, long factors)' },
  { name: 'granite', arch: 'granite', label: 'granite (multipliers)' },
  { name: 'granitemoe', arch: 'granitemoe', label: 'granitemoe (3 experts, top 2)' },
  { name: 'granitemoeshared', arch: 'granitemoeshared', label: 'granitemoeshared (shared expert of 10)' },
];
const TOLERANCE: Record<string, number> = { reference: 1e-5, native: 1e-4 };

for (const kernels of [referenceOps, nativeOps]) {
  for (const c of CASES) {
    const tol = TOLERANCE[kernels.name];
    test(`${c.label} on ${kernels.name} ops: each sequence's prefill and the paged chunked decode match HF within ${tol} relative`, () => {
      const model = createModel(loadFixture(c.name), kernels);
      assert.equal(model.config.architecture, c.arch);
      const ref = referenceOf(c.name);
      const prefill = prefillError(model, ref);
      // The first chunk reaches position 9 ≥ original_max_position_embeddings 8, so LongRoPE takes
      // long_factor from the first step on, as HF did for its whole 16-token sequences (rotary.ts).
      const paged = pagedError(model, ref, 10);
      console.log(
        `# ${c.name} (${kernels.name}): max relative logit error prefill ${prefill.toExponential(2)}, paged ${paged.toExponential(2)}`,
      );
      assert.ok(prefill < tol, `prefill error ${prefill}`);
      assert.ok(paged < tol, `paged error ${paged}`);
    });
  }
}

test('LongRoPE crossing the threshold: a sequence short-rotated in its first step keeps those keys (as HF generate), so it departs from the one-shot reference', () => {
  const model = createModel(loadFixture('phi3_longrope_full'), referenceOps);
  const ref = referenceOf('phi3_longrope_full');
  // First chunk within original_max_position_embeddings (positions 0..4): short_factor for those keys.
  const crossed = pagedError(model, ref, 5);
  console.log(`# phi3_longrope_full: relative error with a 5-token first chunk ${crossed.toExponential(2)}`);
  assert.ok(crossed > 1e-3, `short-rotated keys should show: ${crossed}`);
  // The rows' choice: per sequence, by its largest position in the step.
  const positions = Int32Array.from([0, 1, 2, 3, 4, 7, 8, 9]);
  const seqs = [
    { qStart: 0, qLen: 5, kvLen: 5, blockTable: new Int32Array(2) },
    { qStart: 5, qLen: 2, kvLen: 9, blockTable: new Int32Array(3) },
  ];
  assert.deepEqual([...longRopeRows(positions, 8, seqs, 8)], [0, 0, 0, 0, 0, 1, 1, 1]);
  assert.deepEqual([...longRopeRows(Int32Array.from([7]), 1, [], 8)], [0]);
  assert.deepEqual([...longRopeRows(Int32Array.from([8]), 1, [], 8)], [1]);
});

test('the fixtures exercise the options: without them the logits no longer match', () => {
  const ref = referenceOf('granite');
  const checkpoint = loadFixture('granite');
  const base = createModel(checkpoint, referenceOps) as DecoderTransformer;
  assert.ok(prefillError(base, ref) < 1e-5);
  const opts = phi3.decoderOptions(checkpoint.config); // no multipliers
  assert.ok(prefillError(new DecoderTransformer(checkpoint, referenceOps, opts), ref) > 1e-2, 'granite without its multipliers');
  const phi = loadFixture('phi3_longrope');
  const plain = new DecoderTransformer(phi, referenceOps, { ...phi3.decoderOptions(phi.config), rotary: undefined });
  assert.ok(prefillError(plain, referenceOf('phi3_longrope')) > 1e-3, 'phi3 LongRoPE as plain RoPE');
  const shared = loadFixture('granitemoeshared');
  const noShared = createModel({ ...shared, config: { ...shared.config, sharedExpertIntermediateSize: undefined } }, referenceOps);
  assert.ok(prefillError(noShared, referenceOf('granitemoeshared')) > 1e-3, 'granitemoeshared without its shared expert');
});

// ---- config ------------------------------------------------------------------------------------

const readConfig = (name: string) =>
  JSON.parse(readFileSync(resolve(fixtureDir(name), `tiny_${name}_config.json`), 'utf8')) as Record<string, unknown>;

test('Phi-3 and Granite configs: rotary dim, LongRoPE, multipliers, experts and the shared expert from config.json', () => {
  const phi = configFromHf(readConfig('phi3'));
  assert.equal(phi.architecture, 'phi3');
  assert.equal(phi.rotaryDim, 6);
  assert.equal(phi.slidingWindow, 4);
  assert.equal(phi.longRope, undefined);
  const lr = configFromHf(readConfig('phi3_longrope'));
  assert.equal(lr.rotaryDim, 6);
  assert.deepEqual(lr.longRope, {
    shortFactor: [1, 1, 1],
    longFactor: [1, 1.3, 1.8],
    originalMaxPositionEmbeddings: 8,
    attentionFactor: Math.sqrt(1 + Math.log(32 / 8) / Math.log(8)),
  });
  const full = configFromHf(readConfig('phi3_longrope_full'));
  assert.equal(full.rotaryDim, undefined, 'partial_rotary_factor 1.0 is the whole head');
  assert.deepEqual(full.longRope?.longFactor, [1, 1.3, 1.8, 2.4]);
  // transformers 5 layout (rope_parameters, `type`), a given attention_factor, and bad factor counts.
  const t5 = configFromHf({
    ...readConfig('phi3_longrope_full'),
    rope_scaling: undefined,
    original_max_position_embeddings: undefined,
    rope_parameters: {
      type: 'longrope',
      rope_theta: 10000,
      short_factor: [1, 1, 1, 1],
      long_factor: [2, 2, 2, 2],
      original_max_position_embeddings: 4,
      attention_factor: 1.5,
    },
  });
  assert.deepEqual(t5.longRope, {
    shortFactor: [1, 1, 1, 1],
    longFactor: [2, 2, 2, 2],
    originalMaxPositionEmbeddings: 4,
    attentionFactor: 1.5,
  });
  assert.throws(
    () =>
      configFromHf({ ...readConfig('phi3_longrope'), rope_scaling: { rope_type: 'longrope', short_factor: [1], long_factor: [1, 1, 1] } }),
    /short_factor must be 3 positive numbers/,
  );
  const g = configFromHf(readConfig('granite'));
  assert.equal(g.architecture, 'granite');
  assert.deepEqual([g.embeddingMultiplier, g.residualMultiplier, g.attentionMultiplier, g.logitsScaling], [1.7, 0.6, 2, 2.5]);
  const moe = configFromHf(readConfig('granitemoe'));
  assert.equal(moe.architecture, 'granitemoe');
  assert.deepEqual([moe.numExperts, moe.numExpertsPerTok, moe.moeIntermediateSize, moe.normTopkProb], [3, 2, 12, true]);
  assert.equal(moe.sharedExpertIntermediateSize, undefined, 'shared_intermediate_size 0: none');
  const shared = configFromHf(readConfig('granitemoeshared'));
  assert.equal(shared.architecture, 'granitemoeshared', 'the class picks the row over model_type granitemoe');
  assert.equal(shared.sharedExpertIntermediateSize, 10);
  // Families without these keys read as before.
  const llama = configFromHf({
    architectures: ['LlamaForCausalLM'],
    hidden_size: 8,
    num_attention_heads: 2,
    num_hidden_layers: 1,
    intermediate_size: 4,
    vocab_size: 5,
  });
  for (const key of ['rotaryDim', 'longRope', 'embeddingMultiplier', 'residualMultiplier', 'attentionMultiplier', 'logitsScaling']) {
    assert.ok(!(key in llama), key);
  }
});

test('GGUF: granite and granitemoe rows, llama.cpp multiplier keys; shared experts refused', () => {
  const meta = {
    'general.architecture': 'granite',
    'granite.embedding_length': 8,
    'granite.attention.head_count': 2,
    'granite.block_count': 1,
    'granite.feed_forward_length': 12,
    'granite.vocab_size': 13,
    'granite.embedding_scale': 12,
    'granite.residual_scale': 0.22,
    'granite.attention.scale': 0.0078125,
    'granite.logit_scale': 8,
  };
  const c = configFromGguf(meta, { hasOutputWeight: true });
  assert.equal(c.architecture, 'granite');
  assert.deepEqual([c.embeddingMultiplier, c.residualMultiplier, c.attentionMultiplier, c.logitsScaling], [12, 0.22, 0.0078125, 8]);
  assert.equal(architectureForGguf('granitemoe', true)?.name, 'granitemoe');
  const moe = Object.fromEntries(Object.entries(meta).map(([k, v]) => [k.replace(/^granite\./, 'granitemoe.'), v]));
  moe['general.architecture'] = 'granitemoe';
  const withExperts = { ...moe, 'granitemoe.expert_count': 3, 'granitemoe.expert_used_count': 2 };
  assert.equal(configFromGguf(withExperts, { hasOutputWeight: true }).architecture, 'granitemoe');
  assert.throws(
    () => configFromGguf({ ...withExperts, 'granitemoe.expert_shared_feed_forward_length': 10 }, { hasOutputWeight: true }),
    /shared experts .* not supported/,
  );
});

// ---- rope with RopeFrequencies -------------------------------------------------------------------

function randomArray(len: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(len);
  for (let i = 0; i < len; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(nativeInfo().bestCpuPath) + 1);

test('rope with RopeFrequencies (partial rotary, given inverse frequencies, cos/sin scale): native matches the reference on every CPU path', () => {
  const n = 37,
    heads = 3,
    headDim = 16;
  const positions = Int32Array.from({ length: n }, (_, i) => (i * 977) % 40000);
  const cases: RopeFrequencies[] = [
    { rotaryDim: 12 },
    { rotaryDim: 16, invFreq: longRopeInvFreq(16, 10000, [1, 1.3, 1.8, 2.4, 3, 4, 6, 8]), scale: 1.29 },
    { rotaryDim: 10, invFreq: longRopeInvFreq(10, 500000, [1, 2, 3, 4, 5]), scale: 0.9 },
    { scale: 1.1 },
  ];
  const run = (ops: Ops, freqs: RopeFrequencies | undefined, style: 'neox' | 'normal') => {
    const x = randomArray(n * heads * headDim, 7);
    ops.rope(x, n, heads, headDim, positions, 10000, style, freqs);
    return x;
  };
  const best = nativeInfo().cpuPath;
  try {
    for (const path of PATHS) {
      setCpuPath(path);
      for (const style of ['neox', 'normal'] as const) {
        for (const freqs of cases) {
          const ref = run(referenceOps, freqs, style);
          const nat = run(nativeOps, freqs, style);
          assert.ok(maxAbsDiff(ref, nat) < 1e-6, `${path} ${style} ${JSON.stringify(freqs)}: ${maxAbsDiff(ref, nat)}`);
          // The elements past rotaryDim pass unchanged.
          const rot = freqs.rotaryDim ?? headDim;
          const x0 = randomArray(n * heads * headDim, 7);
          for (let i = 0; i < n * heads; i++) {
            for (let d = rot; d < headDim; d++) assert.equal(nat[i * headDim + d], x0[i * headDim + d]);
          }
        }
        // Plain frequencies given explicitly are plain RoPE, bit for bit (existing callers pass none).
        assert.deepEqual(run(nativeOps, { rotaryDim: headDim, scale: 1 }, style), run(nativeOps, undefined, style));
        assert.deepEqual(run(referenceOps, { rotaryDim: headDim, scale: 1 }, style), run(referenceOps, undefined, style));
      }
    }
  } finally {
    setCpuPath(best);
  }
  assert.throws(() => nativeOps.rope(new Float32Array(16), 1, 1, 16, Int32Array.from([0]), 10000, 'neox', { rotaryDim: 7 }), /rotaryDim/);
  assert.throws(
    () => nativeOps.rope(new Float32Array(16), 1, 1, 16, Int32Array.from([0]), 10000, 'neox', { invFreq: new Float32Array(3) }),
    /invFreq/,
  );
});
