// Qwen3.5 (Gated DeltaNet + gated attention hybrid) against transformers' goldens (ferrl fixtures,
// /work/shared/models/arch-fixtures): the layer ops against gdn_golden.json, the dense and MoE tiny
// models' logits (full prefill batch 1 / 2, prefill → chunk → single-token decodes) on the reference and
// native ops, and the recurrent-state seam (slots per sequence, reset, copy).
//
// Tolerances (max |ours − golden|, goldens from transformers 5.11 in f32):
//   ops: recurrent delta rule out / state 1e-5 (measured ~1e-7); against the chunked-form goldens 1e-5
//        (measured ~1e-6); conv 1e-6; l2norm / softplus / gated and (1 + w) RMSNorm 1e-6. The delta rule
//        runs in both forms (recurrent, chunked) on the reference and every native path.
//   native vs reference ops on random shapes: 1e-5 · max |reference| on every kernel path; the chunked
//        form (native and reference) against the reference recurrence: 2e-6 · max |reference| (measured
//        ≤ ~3e-7 relative, see the console lines); a sequence's rows and state do not depend on the
//        batch (bit for bit), and a sequence split at a chunk boundary ends in the same state.
//   model logits (values up to ~9): 1e-4 dense and MoE (measured: see the console lines).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { PagedRun } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { gatedDeltaRuleChunked, l2normalize } from '../../src/kernels/reference-recurrent.js';
import {
  DEFAULT_CHUNKED_MIN_TOKENS,
  nativeInfo,
  nativeOps,
  setChunkedRecurrence,
  setCpuPath,
  type CpuPath,
} from '../../src/kernels/native.js';
import type { Ops, RecurrentSeq } from '../../src/kernels/ops.js';
import { createModel, type Model } from '../../src/model/architectures/index.js';
import { LinearAttentionState } from '../../src/model/architectures/recurrent-state.js';
import { gdnGates, softplus } from '../../src/model/architectures/gated-delta-net.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { configFromHf } from '../../src/model/model-config.js';
import { allocateKvCache, kvBytesPerToken } from '../../src/engine/kv-cache.js';
import { rng, randomF32 } from '../helpers/random-arrays.js';

const ARCH = resolve(MODELS, 'arch-fixtures');
const DENSE = resolve(ARCH, 'ferrl-tiny_qwen35');
const MOE = resolve(ARCH, 'ferrl-tiny_qwen35_moe');

type Json = Record<string, unknown>;
const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8')) as Json;

function maxErr(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  assert.equal(actual.length, expected.length, 'length');
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    const e = Math.abs(actual[i] - expected[i]);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

const silu = (x: number): number => x / (1 + Math.exp(-x));
const f32 = (a: unknown): Float32Array => Float32Array.from(a as number[]);

// ---- ops against gdn_golden.json ----------------------------------------------------------------

interface DeltaCase {
  b: number;
  t: number;
  h: number;
  k: number;
  v: number;
  query: number[];
  key: number[];
  value: number[];
  g: number[];
  beta: number[];
  initial_state?: number[];
  out: number[];
  state: number[];
}

/** One golden delta-rule case ([b, t, h, ·] inputs, state [b, h, k, v]): each batch entry a sequence of its own slot. */
function runDeltaCase(ops: Ops, c: DeltaCase): { out: Float32Array; state: Float32Array } {
  const seqs: RecurrentSeq[] = Array.from({ length: c.b }, (_, i) => ({ qStart: i * c.t, qLen: c.t, slot: i }));
  const state = c.initial_state ? f32(c.initial_state) : new Float32Array(c.b * c.h * c.k * c.v);
  const out = new Float32Array(c.b * c.t * c.h * c.v);
  const params = { numKHeads: c.h, numVHeads: c.h, kDim: c.k, vDim: c.v, l2norm: true };
  ops.gatedDeltaRule(f32(c.query), f32(c.key), f32(c.value), f32(c.g), f32(c.beta), seqs, params, state, out);
  return { out, state };
}

interface ConvCase {
  b: number;
  c: number;
  l: number;
  kernel: number;
  x: number[];
  weight: number[];
  left?: number[];
  out: number[];
}

/** A golden conv case (x, out [b, c, l]; weight [c, k]; left context [b, c, k − 1]; out without SiLU) in the op's layouts. */
function runConvCase(ops: Ops, g: ConvCase): { out: Float32Array; want: Float32Array; state: Float32Array; wantState: Float32Array } {
  const { b, c: C, l: L, kernel: K } = g;
  const x = new Float32Array(b * L * C);
  const want = new Float32Array(b * L * C);
  const w = new Float32Array(K * C);
  const state = new Float32Array(b * (K - 1) * C);
  for (let i = 0; i < b; i++)
    for (let ch = 0; ch < C; ch++) {
      for (let t = 0; t < L; t++) {
        x[(i * L + t) * C + ch] = g.x[(i * C + ch) * L + t];
        want[(i * L + t) * C + ch] = silu(g.out[(i * C + ch) * L + t]);
      }
      for (let j = 0; j < K - 1; j++) if (g.left) state[(i * (K - 1) + j) * C + ch] = g.left[(i * C + ch) * (K - 1) + j];
    }
  for (let ch = 0; ch < C; ch++) for (let j = 0; j < K; j++) w[j * C + ch] = g.weight[ch * K + j];
  // After the call each slot holds the sequence's last K − 1 inputs.
  const wantState = new Float32Array(state.length);
  for (let i = 0; i < b; i++) wantState.set(x.subarray((i * L + L - (K - 1)) * C, (i * L + L) * C), i * (K - 1) * C);
  const out = new Float32Array(x.length);
  const seqs = Array.from({ length: b }, (_, i) => ({ qStart: i * L, qLen: L, slot: i }));
  ops.causalConv1d(x, C, K, w, seqs, state, out);
  return { out, want, state, wantState };
}

const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const info = nativeInfo();
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);

describe('qwen3.5 ops against gdn_golden.json', () => {
  const golden = readJson(resolve(ARCH, 'ferrl-layer-goldens', 'gdn_golden.json')).cases as Record<string, Json>;
  const runs: { label: string; ops: Ops; path?: CpuPath; chunkMin?: number }[] = [
    { label: 'reference', ops: referenceOps },
    { label: 'reference, chunked delta rule', ops: { ...referenceOps, gatedDeltaRule: gatedDeltaRuleChunked } },
    ...PATHS.flatMap((path) => [
      { label: `native ${path}, recurrent`, ops: nativeOps, path, chunkMin: Infinity },
      { label: `native ${path}, chunked`, ops: nativeOps, path, chunkMin: 0 },
    ]),
  ];
  for (const { label, ops, path, chunkMin } of runs) {
    describe(label, () => {
      if (path) {
        before(() => {
          setCpuPath(path);
          setChunkedRecurrence(chunkMin ?? DEFAULT_CHUNKED_MIN_TOKENS);
        });
        after(() => {
          setCpuPath(info.bestCpuPath);
          setChunkedRecurrence(DEFAULT_CHUNKED_MIN_TOKENS);
        });
      }
      for (const name of ['recurrent_no_state', 'recurrent_with_state', 'chunked_t130', 'chunked_with_state']) {
        it(`gated delta rule: ${name}`, () => {
          const c = golden[name] as unknown as DeltaCase;
          const { out, state } = runDeltaCase(ops, c);
          const eOut = maxErr(out, c.out);
          const eState = maxErr(state, c.state);
          assert.ok(eOut <= 1e-5 && eState <= 1e-5, `${name}: out ${eOut}, state ${eState}`);
        });
      }
      for (const name of ['conv_no_ctx', 'conv_with_ctx']) {
        it(`causal conv1d + SiLU: ${name}`, () => {
          const r = runConvCase(ops, golden[name] as unknown as ConvCase);
          const e = maxErr(r.out, r.want);
          assert.ok(e <= 1e-6, `${name}: ${e}`);
          assert.equal(maxErr(r.state, r.wantState), 0, `${name}: carried state`);
        });
      }
      it('gated RMSNorm (rmsnorm · weight · silu(z)) and the (1 + w) RMSNorm', () => {
        const g = golden.rmsnorm_gated as { rows: number; hidden: number; x: number[]; gate: number[]; weight: number[]; out: number[] };
        const out = new Float32Array(g.rows * g.hidden);
        ops.rmsnorm(f32(g.x), g.rows, g.hidden, f32(g.weight), 1e-6, out);
        ops.siluMul(f32(g.gate), out, out, out.length);
        assert.ok(maxErr(out, g.out) <= 1e-6, `gated: ${maxErr(out, g.out)}`);
        const z = golden.rmsnorm_zero_centered as { hidden: number; x: number[]; weight: number[]; out: number[] };
        const rows = z.x.length / z.hidden;
        const zOut = new Float32Array(z.x.length);
        ops.rmsnorm(
          f32(z.x),
          rows,
          z.hidden,
          f32(z.weight).map((w) => 1 + w),
          1e-6,
          zOut,
        );
        assert.ok(maxErr(zOut, z.out) <= 1e-6, `zero-centred: ${maxErr(zOut, z.out)}`);
      });
    });
  }

  it('l2norm (eps 1e-6 inside the root) and softplus as transformers', () => {
    for (const name of ['l2norm', 'l2norm_small']) {
      const g = golden[name] as { rows: number; dim: number; x: number[]; out: number[] };
      const out = new Float32Array(g.x.length);
      l2normalize(f32(g.x), g.rows, g.dim, out);
      assert.ok(maxErr(out, g.out) <= 1e-6, `${name}: ${maxErr(out, g.out)}`);
    }
    const sp = golden.softplus as { x: number[]; out: number[] };
    assert.ok(maxErr(sp.x.map(softplus), sp.out) <= 1e-6);
    // gdnGates: beta = sigmoid(b), g = −exp(A_log) · softplus(a + dt_bias).
    const a = Float32Array.of(0.5, -2),
      b = Float32Array.of(0, 1);
    gdnGates(a, b, 1, Float32Array.of(-Math.exp(0.3), -Math.exp(-1)), Float32Array.of(1, 0.5));
    assert.ok(Math.abs(b[0] - 0.5) < 1e-7 && Math.abs(b[1] - 1 / (1 + Math.exp(-1))) < 1e-7);
    assert.ok(
      Math.abs(a[0] + Math.exp(0.3) * Math.log1p(Math.exp(1.5))) < 1e-5 &&
        Math.abs(a[1] + Math.exp(-1) * Math.log1p(Math.exp(-1.5))) < 1e-6,
    );
  });
});

describe('qwen3.5 native recurrent ops match the reference (random shapes, GQA, several sequences)', () => {
  for (const path of PATHS) {
    it(`${path}`, () => {
      setCpuPath(path);
      try {
        const r = rng(35);
        for (const [nk, nv, K, V, channels, kernel] of [
          [2, 4, 8, 8, 40, 4],
          [1, 3, 5, 19, 37, 3],
          [4, 8, 16, 33, 300, 4],
        ]) {
          const seqs: RecurrentSeq[] = [
            { qStart: 0, qLen: 5, slot: 2 },
            { qStart: 5, qLen: 1, slot: 0 },
            { qStart: 6, qLen: 3, slot: 1 },
          ];
          const rows = 9;
          const q = randomF32(r, rows * nk * K),
            k = randomF32(r, rows * nk * K),
            v = randomF32(r, rows * nv * V);
          const g = randomF32(r, rows * nv).map((x) => -Math.abs(x));
          const beta = randomF32(r, rows * nv).map((x) => 1 / (1 + Math.exp(-x)));
          const state0 = randomF32(r, 3 * nv * K * V);
          const params = { numKHeads: nk, numVHeads: nv, kDim: K, vDim: V, l2norm: true };
          const [sRef, sNat] = [state0.slice(), state0.slice()];
          const [oRef, oNat] = [new Float32Array(rows * nv * V), new Float32Array(rows * nv * V)];
          referenceOps.gatedDeltaRule(q, k, v, g, beta, seqs, params, sRef, oRef);
          nativeOps.gatedDeltaRule(q, k, v, g, beta, seqs, params, sNat, oNat);
          const scale = (a: Float32Array): number => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
          assert.ok(maxErr(oNat, oRef) <= 1e-5 * scale(oRef), `delta out ${maxErr(oNat, oRef)}`);
          assert.ok(maxErr(sNat, sRef) <= 1e-5 * scale(sRef), `delta state ${maxErr(sNat, sRef)}`);

          const x = randomF32(r, rows * channels);
          const w = randomF32(r, kernel * channels);
          const c0 = randomF32(r, 3 * (kernel - 1) * channels);
          const [cRef, cNat] = [c0.slice(), c0.slice()];
          const [xRef, xNat] = [new Float32Array(rows * channels), new Float32Array(rows * channels)];
          referenceOps.causalConv1d(x, channels, kernel, w, seqs, cRef, xRef);
          nativeOps.causalConv1d(x, channels, kernel, w, seqs, cNat, xNat);
          assert.ok(maxErr(xNat, xRef) <= 1e-5 * scale(xRef), `conv out ${maxErr(xNat, xRef)}`);
          assert.equal(maxErr(cNat, cRef), 0, 'conv state');
        }
      } finally {
        setCpuPath(info.bestCpuPath);
      }
    });
  }
});

describe('qwen3.5 chunked delta rule matches the recurrence (lengths around the 64-token chunk, a state, GQA, a batch)', () => {
  const r = rng(64);
  const lens = [150, 1, 64, 17, 65, 63, 129];
  const rows = lens.reduce((a, b) => a + b, 0);
  const seqs: RecurrentSeq[] = [];
  for (let i = 0, at = 0; i < lens.length; at += lens[i], i++) seqs.push({ qStart: at, qLen: lens[i], slot: (i * 3) % lens.length });
  const cases = [
    [2, 4, 16, 24],
    [1, 3, 5, 19],
    [2, 2, 128, 128],
  ].map(([nk, nv, K, V]) => ({
    params: { numKHeads: nk, numVHeads: nv, kDim: K, vDim: V, l2norm: true },
    q: randomF32(r, rows * nk * K),
    k: randomF32(r, rows * nk * K),
    v: randomF32(r, rows * nv * V),
    g: randomF32(r, rows * nv).map((x) => -0.05 - Math.abs(x)),
    beta: randomF32(r, rows * nv).map((x) => 1 / (1 + Math.exp(-2 * x))),
    state0: randomF32(r, lens.length * nv * K * V),
  }));
  type Case = (typeof cases)[number];
  type DeltaOp = Ops['gatedDeltaRule'];
  const run = (op: DeltaOp, c: Case, ss: readonly RecurrentSeq[] = seqs): { out: Float32Array; state: Float32Array } => {
    const state = c.state0.slice();
    const out = new Float32Array(rows * c.params.numVHeads * c.params.vDim);
    op(c.q, c.k, c.v, c.g, c.beta, ss, c.params, state, out);
    return { out, state };
  };
  const scale = (a: Float32Array): number => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  const want = cases.map((c) => run(referenceOps.gatedDeltaRule, c));

  it('reference chunked form', () => {
    cases.forEach((c, i) => {
      const got = run(gatedDeltaRuleChunked, c);
      const eo = maxErr(got.out, want[i].out) / scale(want[i].out),
        es = maxErr(got.state, want[i].state) / scale(want[i].state);
      console.log(
        `# reference chunked delta rule ${JSON.stringify(c.params)}: out ${eo.toExponential(2)}, state ${es.toExponential(2)} (relative)`,
      );
      assert.ok(eo <= 1e-6 && es <= 1e-6, `out ${eo}, state ${es}`);
    });
  });
  for (const path of PATHS) {
    it(`native ${path}: chunked form, batch invariance, a split at a chunk boundary`, () => {
      setCpuPath(path);
      setChunkedRecurrence(0);
      try {
        cases.forEach((c, i) => {
          const got = run(nativeOps.gatedDeltaRule, c);
          const eo = maxErr(got.out, want[i].out) / scale(want[i].out),
            es = maxErr(got.state, want[i].state) / scale(want[i].state);
          console.log(
            `# native ${path} chunked delta rule ${JSON.stringify(c.params)}: out ${eo.toExponential(2)}, state ${es.toExponential(2)} (relative)`,
          );
          assert.ok(eo <= 2e-6 && es <= 2e-6, `out ${eo}, state ${es}`);
          // Batch invariance: each sequence alone gives its rows and state bit for bit.
          const { numVHeads: nv, kDim: K, vDim: V } = c.params;
          for (const s of seqs) {
            const alone = run(nativeOps.gatedDeltaRule, c, [s]);
            const rowsOf = (o: Float32Array): Float32Array => o.subarray(s.qStart * nv * V, (s.qStart + s.qLen) * nv * V);
            const slotOf = (st: Float32Array): Float32Array => st.subarray(s.slot * nv * K * V, (s.slot + 1) * nv * K * V);
            assert.equal(maxErr(rowsOf(alone.out), rowsOf(got.out)), 0, `rows of ${JSON.stringify(s)}`);
            assert.equal(maxErr(slotOf(alone.state), slotOf(got.state)), 0, `state of ${JSON.stringify(s)}`);
          }
          // The first sequence (150 rows) in two calls split at row 64 ends in the one-call state.
          const first = seqs[0];
          const split = run(nativeOps.gatedDeltaRule, c, [{ ...first, qLen: 64 }]);
          const rest = { q: c.q, k: c.k, v: c.v, g: c.g, beta: c.beta };
          const out2 = new Float32Array(got.out.length);
          nativeOps.gatedDeltaRule(
            rest.q,
            rest.k,
            rest.v,
            rest.g,
            rest.beta,
            [{ ...first, qStart: first.qStart + 64, qLen: 86 }],
            c.params,
            split.state,
            out2,
          );
          const slot = (st: Float32Array): Float32Array => st.subarray(first.slot * nv * K * V, (first.slot + 1) * nv * K * V);
          assert.equal(maxErr(slot(split.state), slot(got.state)), 0, 'split at a chunk boundary');
        });
      } finally {
        setCpuPath(info.bestCpuPath);
        setChunkedRecurrence(DEFAULT_CHUNKED_MIN_TOKENS);
      }
    });
  }
});

// ---- config --------------------------------------------------------------------------------------

describe('qwen3.5 config', () => {
  it('reads layer types, linear-attention shapes, partial rotary and the MoE fields', () => {
    const dense = configFromHf(readJson(resolve(DENSE, 'config.json')));
    assert.equal(dense.architecture, 'qwen3_5');
    assert.deepEqual(dense.layerTypes, ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']);
    assert.deepEqual(dense.linearAttention, { convKernel: 4, numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 8, valueHeadDim: 8 });
    assert.equal(dense.headDim, 32);
    assert.equal(dense.rotaryDim, 8);
    assert.equal(dense.ropeTheta, 1e7);
    assert.deepEqual(dense.mropeSection, [2, 1, 1]);
    assert.equal(dense.numExperts, undefined);
    const moe = configFromHf(readJson(resolve(MOE, 'config.json')));
    assert.equal(moe.architecture, 'qwen3_5_moe');
    assert.equal(moe.numExperts, 8);
    assert.equal(moe.numExpertsPerTok, 2);
    assert.equal(moe.moeIntermediateSize, 6);
    assert.equal(moe.intermediateSize, 6);
    assert.equal(moe.normTopkProb, true);
    assert.equal(moe.sharedExpertIntermediateSize, 12);
    assert.deepEqual(moe.moeLayers, [true, true, true, true]);
    // The text config alone (model_type qwen3_5_text) reads the same.
    const text = (readJson(resolve(DENSE, 'config.json')).text_config ?? {}) as Json;
    assert.deepEqual(configFromHf(text).layerTypes, dense.layerTypes);
  });

  it('allocates KV storage for the full-attention layers only', () => {
    const c = configFromHf(readJson(resolve(DENSE, 'config.json')));
    const kv = allocateKvCache(c, 4, 4, 'f32');
    assert.deepEqual(
      kv.map((l) => l.k.length),
      [0, 0, 0, 4 * 4 * 2 * 32 * 4],
    );
    assert.equal(kvBytesPerToken(c, 'f32'), 2 * 2 * 32 * 4);
  });
});

// ---- models against golden.json ------------------------------------------------------------------

interface Golden {
  full_b1: { input_ids: number[][]; logits: number[] };
  full_b2: { input_ids: number[][]; logits: number[] };
  cached_split: {
    input_ids: number[][];
    prefill_len: number;
    chunk_len: number;
    prefill_logits: number[];
    chunk_logits: number[];
    decode_logits: number[][];
    uncached_logits: number[];
  };
}

const MODEL_CASES = [
  { label: 'dense', dir: DENSE, tol: 1e-4 },
  { label: 'MoE', dir: MOE, tol: 1e-3 },
];

for (const ops of [referenceOps, nativeOps]) {
  for (const { label, dir, tol } of MODEL_CASES) {
    describe(`qwen3.5 ${label} on ${ops.name} ops against golden.json`, () => {
      const golden = readJson(resolve(dir, 'golden.json')).cases as unknown as Golden;
      const model: Model = createModel(loadCheckpoint(dir, { fastLoad: true }), ops);
      const V = model.config.vocabSize;

      it('has recurrent state: bytes per slot over the three linear-attention layers', () => {
        const state = model.createRecurrentState?.(3);
        assert.ok(state);
        // conv (3 · 64 channels) + delta (4 heads · 8 · 8), f32, three layers.
        assert.equal(state.bytesPerSlot, 3 * 4 * (3 * 64 + 4 * 8 * 8));
        // Without its state the model refuses to run.
        const batch = {
          tokens: Int32Array.of(1),
          positions: Int32Array.of(0),
          slots: Int32Array.of(0),
          seqs: [],
          logitRows: Int32Array.of(0),
        };
        assert.throws(() => model.forward(batch, allocateKvCache(model.config, 1, 4, 'f32')), /recurrent layers/);
      });

      it('full prefill, batch 1 and batch 2 (two sequences, two slots, one batch)', () => {
        for (const c of [golden.full_b1, golden.full_b2]) {
          const run = new PagedRun(
            model,
            c.input_ids.map((s) => s.length),
            4,
          );
          const logits = run.step(
            c.input_ids.map((tokens, seq) => ({ seq, tokens })),
            true,
          );
          const e = maxErr(logits, c.logits);
          console.log(`# ${label} ${ops.name} full b${c.input_ids.length}: max err ${e.toExponential(2)}`);
          assert.ok(e <= tol, `full b${c.input_ids.length}: ${e}`);
        }
      });

      it('cached split: prefill → chunk → single-token decodes continue the slot', () => {
        const c = golden.cached_split;
        const ids = c.input_ids[0];
        const run = new PagedRun(model, [ids.length], 4);
        const prefill = run.step([{ seq: 0, tokens: ids.slice(0, c.prefill_len) }], true);
        const mid = c.prefill_len + c.chunk_len;
        const chunk = run.step([{ seq: 0, tokens: ids.slice(c.prefill_len, mid) }], true);
        const decodes = ids.slice(mid).map((t) => run.step([{ seq: 0, tokens: [t] }], false));
        const errs = [
          maxErr(prefill, c.prefill_logits),
          maxErr(chunk, c.chunk_logits),
          ...decodes.map((d, i) => maxErr(d, c.decode_logits[i])),
        ];
        console.log(`# ${label} ${ops.name} cached split (prefill, chunk, decodes): ${errs.map((e) => e.toExponential(2)).join(' ')}`);
        for (const e of errs) assert.ok(e <= tol, `cached split: ${errs.join(', ')}`);
        // Token by token from the start matches the uncached logits too.
        const step = new PagedRun(model, [ids.length], 4);
        let worst = 0;
        ids.forEach(
          (t, pos) =>
            (worst = Math.max(worst, maxErr(step.step([{ seq: 0, tokens: [t] }], false), c.uncached_logits.slice(pos * V, (pos + 1) * V)))),
        );
        assert.ok(worst <= tol, `token by token: ${worst}`);
      });

      it('two sequences interleaved in chunks with distinct slots each match their own golden', () => {
        const c = golden.full_b2;
        const [a, b] = c.input_ids;
        const run = new PagedRun(model, [a.length, b.length], 4);
        // Slots swapped from the default, so slot ≠ sequence index.
        assert.ok(run.recurrent);
        run.recurrent.slots.splice(0, 2, 1, 0);
        const rowsA: Float32Array[] = [],
          rowsB: Float32Array[] = [];
        const take = (logits: Float32Array, lens: number[], into: Float32Array[][]): void => {
          let row = 0;
          lens.forEach((len, i) => {
            for (let j = 0; j < len; j++) into[i].push(logits.slice(row * V, ++row * V));
          });
        };
        take(
          run.step(
            [
              { seq: 0, tokens: a.slice(0, 3) },
              { seq: 1, tokens: b.slice(0, 6) },
            ],
            true,
          ),
          [3, 6],
          [rowsA, rowsB],
        );
        take(
          run.step(
            [
              { seq: 1, tokens: b.slice(6, 7) },
              { seq: 0, tokens: a.slice(3, 8) },
            ],
            true,
          ),
          [1, 5],
          [rowsB, rowsA],
        );
        take(
          run.step(
            [
              { seq: 0, tokens: a.slice(8) },
              { seq: 1, tokens: b.slice(7) },
            ],
            true,
          ),
          [2, 3],
          [rowsA, rowsB],
        );
        const flat = (rows: Float32Array[]): number[] => rows.flatMap((r) => [...r]);
        const e0 = maxErr(flat(rowsA), c.logits.slice(0, a.length * V));
        const e1 = maxErr(flat(rowsB), c.logits.slice(a.length * V));
        assert.ok(e0 <= tol && e1 <= tol, `interleaved: ${e0}, ${e1}`);
      });

      it('a reused slot starts over at position 0; reset zeroes a slot', () => {
        const c = golden.full_b1;
        const ids = c.input_ids[0];
        const run = new PagedRun(model, [ids.length], 4);
        run.step([{ seq: 0, tokens: [5, 6, 7, 8, 9] }], false);
        run.restart(0);
        const again = run.step([{ seq: 0, tokens: ids }], true);
        assert.ok(maxErr(again, c.logits) <= tol, `restarted: ${maxErr(again, c.logits)}`);
        const state = run.recurrent?.state;
        assert.ok(state instanceof LinearAttentionState);
        assert.ok(state.layers.some((l) => l?.delta.some((x) => x !== 0)));
        state.reset(0);
        for (const l of state.layers) assert.ok(!l || (l.conv.every((x) => x === 0) && l.delta.every((x) => x === 0)));
        assert.throws(() => state.reset(1), RangeError);
      });

      it('copy(from, to) then continuing from `to` matches continuing from `from`', () => {
        const c = golden.cached_split;
        const ids = c.input_ids[0];
        const mid = c.prefill_len + c.chunk_len;
        // Two slots for one sequence: the run continues from a copy while the original is overwritten.
        const run = new PagedRun(model, [ids.length, 1], 4);
        assert.ok(run.recurrent);
        run.step([{ seq: 0, tokens: ids.slice(0, c.prefill_len) }], false);
        run.recurrent.state.copy(0, 1);
        run.step([{ seq: 1, tokens: [3] }], false); // sequence 1 starts at position 0: slot 1 is reset and overwritten…
        run.recurrent.state.copy(0, 1); // …so copy again, then scribble over slot 0 by re-pointing it
        run.recurrent.slots.splice(0, 2, 1, 0);
        run.recurrent.state.reset(0);
        const chunk = run.step([{ seq: 0, tokens: ids.slice(c.prefill_len, mid) }], true);
        assert.ok(maxErr(chunk, c.chunk_logits) <= tol, `from the copy: ${maxErr(chunk, c.chunk_logits)}`);
      });
    });
  }
}
