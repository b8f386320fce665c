// Mamba2 and Nemotron-H (Mamba2 + attention + MLP / MoE) against Hugging Face logits (tiny float64
// references from /work/shared/models/arch-fixtures: neural-api-mamba2, -nemotronh, -nemotronh_moe),
// on the reference and the native ops, through the paged KV cache and the recurrent-state slots; their
// config.json reading (and the logit-less _moe2 fixture); the state seam (bytes per slot, reset, copy);
// Nemotron-H's sigmoid group routing; and the new ops (ssdScan, causalConv1d's bias) native against
// the reference on every kernel path this CPU has.
//
// Tolerances. The references are float64; svc computes in f32. Errors are max |ours − HF| / max |HF
// logit| over every position of every sequence: 1e-4 for whole-sequence prefill and the paged paths
// (measured: see the console lines, ~1e-6). Ops native vs reference: 1e-5 · max |reference| (ssdScan
// out and state, conv out); the conv state is copied, so exact. ssdScan's chunked form (reference and
// native, forced) against the reference recurrence: 2e-6 · max |reference| (measured ≤ ~4e-7, see the
// console lines); a sequence's rows and state do not depend on the batch (bit for bit), and a sequence
// split at a chunk boundary ends in the same state.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import {
  PagedRun,
  pagedRows,
  referenceRelError,
  readReferenceLogits,
  type ReferenceLogits,
  type ReferenceRows,
} from '../helpers/paged-run.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { referenceOps } from '../../src/kernels/reference.js';
import {
  DEFAULT_CHUNKED_MIN_TOKENS,
  nativeInfo,
  nativeOps,
  setChunkedRecurrence,
  setCpuPath,
  type CpuPath,
} from '../../src/kernels/native.js';
import { ssdScanChunked } from '../../src/kernels/reference-ssd.js';
import type { Ops, RecurrentSeq, SsdParams } from '../../src/kernels/ops.js';
import { createModel, type Model } from '../../src/model/architectures/index.js';
import { MambaState } from '../../src/model/architectures/mamba-state.js';
import { nemotronLayerTypes, routeSigmoidGroups } from '../../src/model/architectures/nemotron-h.js';
import { recurrentStateBytesPerSlot } from '../../src/model/architectures/recurrent-state.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { configFromHf } from '../../src/model/model-config.js';
import type { Checkpoint, SigmoidRoutingConfig } from '../../src/model/types.js';
import { allocateKvCache, kvBytesPerToken, usesKvCache } from '../../src/engine/kv-cache.js';

const ARCH = resolve(MODELS, 'arch-fixtures');
const NAMES = ['mamba2', 'nemotronh', 'nemotronh_moe'] as const;
type Name = (typeof NAMES)[number] | 'nemotronh_moe2';

const dirOf = (name: Name): string => resolve(ARCH, `neural-api-${name}`);
const configJson = (name: Name): Record<string, unknown> =>
  JSON.parse(readFileSync(resolve(dirOf(name), `tiny_${name}_config.json`), 'utf8')) as Record<string, unknown>;
const checkpoint = (name: Name): Checkpoint =>
  loadSafetensorsCheckpoint({
    files: [resolve(dirOf(name), `tiny_${name}.safetensors`)],
    configPath: resolve(dirOf(name), `tiny_${name}_config.json`),
    fastLoad: true,
  });
const references = new Map<Name, ReferenceLogits>();
function reference(name: Name): ReferenceLogits {
  let ref = references.get(name);
  if (!ref) references.set(name, (ref = readReferenceLogits(resolve(dirOf(name), `tiny_${name}_logits.json`))));
  return ref;
}

type Rows = ReferenceRows;

/** A 3-token prefill, a 2-token chunk, then one token per step, the two sequences' state slots swapped (slot ≠ sequence). */
const MAMBA_PAGED = { chunks: [3, 2] as [number, number], swapSlots: true };

/** All three sequences prefilled in one batch (three slots), logits for every row. */
function prefillRows(model: Model, ref: ReferenceLogits): Rows {
  const vocab = model.config.vocabSize;
  const run = new PagedRun(
    model,
    ref.sequences.map((t) => t.length),
    4,
  );
  const logits = run.step(
    ref.sequences.map((tokens, seq) => ({ seq, tokens })),
    true,
  );
  const rows: Rows = [];
  let row = 0;
  ref.sequences.forEach((tokens, s) => tokens.forEach((_, pos) => rows.push([s, pos, logits.slice(row * vocab, ++row * vocab)])));
  return rows;
}

const TOL = 1e-4;
// Per slot: (conv_kernel − 1) · (heads · head_dim + 2 · groups · d_state) conv values + heads · head_dim · d_state SSM values, f32, per Mamba layer.
const STATE_BYTES: Record<(typeof NAMES)[number], number> = {
  mamba2: 2 * 4 * (3 * (8 + 2 * 4) + 2 * 4 * 4),
  nemotronh: 2 * 4 * (3 * (8 + 2 * 4) + 2 * 4 * 4),
  nemotronh_moe: 1 * 4 * (3 * (8 + 2 * 4) + 2 * 4 * 4),
};

// ---- config --------------------------------------------------------------------------------------

describe('mamba2 / nemotron_h config', () => {
  it('mamba2: every layer a Mamba block, the SSM shapes, dt limit (0, inf), whole-width gated norm, tied head', () => {
    const c = configFromHf(configJson('mamba2'));
    assert.equal(c.architecture, 'mamba2');
    assert.deepEqual(c.layerTypes, ['mamba', 'mamba']);
    assert.deepEqual(c.ssm, {
      numHeads: 2,
      headDim: 4,
      stateSize: 4,
      nGroups: 1,
      convKernel: 4,
      convBias: true,
      projBias: false,
      dtMin: 0,
      dtMax: Infinity,
      normGroupSize: 8,
    });
    assert.equal(c.rmsNormEps, 1e-5);
    assert.equal(c.tieWordEmbeddings, true);
    assert.equal(kvBytesPerToken(c, 'f32'), 0);
    assert.equal(recurrentStateBytesPerSlot(c), STATE_BYTES.mamba2);
    // time_step_limit is the clamp when given.
    assert.deepEqual(configFromHf({ ...configJson('mamba2'), time_step_limit: [0.01, 0.5] }).ssm?.dtMax, 0.5);
  });
  it('nemotron_h: the block pattern, attention-only KV, the Mamba clamp at time_step_min, the MoE routing', () => {
    const c = configFromHf(configJson('nemotronh'));
    assert.equal(c.architecture, 'nemotron_h');
    assert.equal(c.numLayers, 4);
    assert.deepEqual(c.layerTypes, ['mamba', 'full_attention', 'mlp', 'mamba']);
    assert.equal(c.ssm?.dtMin, 0.001);
    assert.equal(c.ssm?.dtMax, Infinity);
    assert.equal(c.ssm?.normGroupSize, 8);
    assert.equal(c.numHeads, 4);
    assert.equal(c.numKvHeads, 2);
    assert.equal(c.headDim, 3);
    assert.deepEqual(
      [0, 1, 2, 3].map((l) => usesKvCache(c, l)),
      [false, true, false, false],
    );
    assert.deepEqual(
      allocateKvCache(c, 2, 4, 'f32').map((l) => l.k.length),
      [0, 2 * 4 * 2 * 3 * 4, 0, 0],
    );
    assert.equal(kvBytesPerToken(c, 'f32'), 2 * 2 * 3 * 4);
    assert.equal(recurrentStateBytesPerSlot(c), STATE_BYTES.nemotronh);
    const moe = configFromHf(configJson('nemotronh_moe'));
    assert.deepEqual(moe.layerTypes, ['mamba', 'full_attention', 'moe', 'mlp']);
    assert.deepEqual(moe.sigmoidRouting, {
      numExperts: 4,
      topK: 2,
      nGroup: 1,
      topkGroup: 1,
      normTopkProb: true,
      routedScalingFactor: 2.5,
      expertWidth: 6,
      sharedWidth: 5,
    });
    // transformers 5's list form, old and new block names alike.
    assert.deepEqual(
      nemotronLayerTypes({ layers_block_type: ['linear_attention', 'attention', 'moe', 'mlp', 'mamba', 'full_attention'] }),
      ['mamba', 'full_attention', 'moe', 'mlp', 'mamba', 'full_attention'],
    );
    assert.throws(() => configFromHf({ ...configJson('nemotronh'), hybrid_override_pattern: 'M*X' }), /unknown block/);
    assert.throws(() => configFromHf({ ...configJson('nemotronh'), mlp_hidden_act: 'gelu' }), /relu2/);
  });
});

// ---- models against the references --------------------------------------------------------------

describe('Mamba2 / Nemotron-H against Hugging Face logits', () => {
  for (const name of NAMES) {
    for (const ops of [referenceOps, nativeOps] as Ops[]) {
      it(`${name} on ${ops.name} ops: batched prefill, and prefill → chunk → decode with two sequences in swapped slots, within ${TOL}`, () => {
        const ref = reference(name);
        const model = createModel(checkpoint(name), ops);
        const prefill = referenceRelError(ref, prefillRows(model, ref));
        const paged = referenceRelError(ref, [
          ...pagedRows(model, ref, [0, 1], MAMBA_PAGED),
          ...pagedRows(model, ref, [2, 0], MAMBA_PAGED),
        ]);
        console.log(
          `# ${name} (${ops.name}): max relative logit error prefill ${prefill.toExponential(2)}, paged ${paged.toExponential(2)}`,
        );
        assert.ok(prefill < TOL, `prefill error ${prefill}`);
        assert.ok(paged < TOL, `paged error ${paged}`);
      });
    }
  }
});

describe('the recurrent-state seam', () => {
  for (const name of NAMES) {
    it(`${name}: bytes per slot as the engine budgets them; without its state the model refuses to run`, () => {
      const model = createModel(checkpoint(name), referenceOps);
      const state = model.createRecurrentState?.(2);
      assert.ok(state instanceof MambaState);
      assert.equal(state.bytesPerSlot, STATE_BYTES[name]);
      assert.equal(state.bytesPerSlot, recurrentStateBytesPerSlot(model.config));
      const batch = {
        tokens: Int32Array.of(1),
        positions: Int32Array.of(0),
        slots: Int32Array.of(0),
        seqs: [],
        logitRows: Int32Array.of(0),
      };
      assert.throws(() => model.forward(batch, allocateKvCache(model.config, 1, 4, 'f32')), /recurrent layers/);
    });
  }
  it('a reused slot starts over at position 0; reset zeroes a slot; copy(from, to) continues alike', () => {
    const ref = reference('nemotronh');
    const model = createModel(checkpoint('nemotronh'), nativeOps);
    const vocab = model.config.vocabSize;
    const ids = ref.sequences[0];
    const want = ref.logits[0].flat();
    const run = new PagedRun(model, [ids.length, ids.length], 4);
    assert.ok(run.recurrent);
    run.step([{ seq: 0, tokens: [5, 6, 7, 8, 9] }], false);
    run.restart(0);
    const again = run.step([{ seq: 0, tokens: ids }], true);
    assert.ok(
      referenceRelError(
        ref,
        ids.map((_, p) => [0, p, again.slice(p * vocab, (p + 1) * vocab)]),
      ) < TOL,
      'restarted',
    );
    const state = run.recurrent.state;
    assert.ok(state instanceof MambaState);
    assert.ok(state.layers.some((l) => l?.ssm.some((x) => x !== 0)));
    assert.throws(() => state.reset(2), RangeError);
    // Prefill 4 tokens of sequence 0, copy its slot to slot 1, wreck slot 0, continue from slot 1.
    const split = new PagedRun(model, [ids.length, 1], 4);
    assert.ok(split.recurrent);
    split.step([{ seq: 0, tokens: ids.slice(0, 4) }], false);
    split.recurrent.state.copy(0, 1);
    split.recurrent.state.reset(0);
    const mamba = split.recurrent.state as MambaState;
    for (const l of mamba.layers)
      assert.ok(
        !l || (l.conv.subarray(0, l.conv.length / 2).every((x) => x === 0) && l.ssm.subarray(0, l.ssm.length / 2).every((x) => x === 0)),
      );
    split.recurrent.slots.splice(0, 2, 1, 0);
    const rest = split.step([{ seq: 0, tokens: ids.slice(4) }], true);
    let err = 0;
    for (let i = 0; i < rest.length; i++) err = Math.max(err, Math.abs(rest[i] - want[4 * vocab + i]));
    assert.ok(err < TOL * 4, `from the copy: ${err}`);
  });
  it('nemotronh_moe2 (MoE-only blocks, no logits): builds without recurrent state, decode equals prefill', () => {
    const model = createModel(checkpoint('nemotronh_moe2'), nativeOps);
    assert.deepEqual(model.config.layerTypes, ['moe', 'moe']);
    assert.equal(model.createRecurrentState, undefined);
    assert.equal(recurrentStateBytesPerSlot(model.config), 0);
    const ids = [1, 4, 2, 5, 3, 0];
    const V = model.config.vocabSize;
    const whole = new PagedRun(model, [ids.length], 4).step([{ seq: 0, tokens: ids }], true);
    const step = new PagedRun(model, [ids.length], 4);
    let err = 0;
    ids.forEach((t, p) => {
      const row = step.step([{ seq: 0, tokens: [t] }], false);
      for (let v = 0; v < V; v++) err = Math.max(err, Math.abs(row[v] - whole[p * V + v]));
    });
    assert.ok(err < 1e-5 && maxAbs(whole) > 0, `decode vs prefill ${err}`);
  });
});

describe('Nemotron-H routing', () => {
  it('sigmoid scores, correction bias for the choice only, best groups by top-2 sum, renormalised and scaled', () => {
    const r: SigmoidRoutingConfig = {
      numExperts: 4,
      topK: 2,
      nGroup: 2,
      topkGroup: 1,
      normTopkProb: true,
      routedScalingFactor: 2,
      expertWidth: 1,
      sharedWidth: 0,
    };
    const logits = Float32Array.of(2, 0, 0.5, 0.4);
    const sig = (x: number): number => 1 / (1 + Math.exp(-x));
    const ids = new Int32Array(2);
    const w = new Float32Array(2);
    // Group 0 (experts 0, 1) sums 0.88 + 0.5; group 1 (2, 3) with +0.5 bias on expert 3 sums 0.62 + 1.10: group 1 wins.
    routeSigmoidGroups(logits, 1, r, Float32Array.of(0, 0, 0, 0.5), ids, w);
    assert.deepEqual([...ids], [3, 2]);
    const [s3, s2] = [sig(0.4), sig(0.5)];
    assert.ok(Math.abs(w[0] - (2 * s3) / (s3 + s2)) < 1e-6 && Math.abs(w[1] - (2 * s2) / (s3 + s2)) < 1e-6);
    // Without the bias group 1 sums 0.62 + 0.60: group 0 wins and its two experts are taken.
    routeSigmoidGroups(logits, 1, r, new Float32Array(4), ids, w);
    assert.deepEqual([...ids], [0, 1]);
  });
});

// ---- ops -----------------------------------------------------------------------------------------

const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const info = nativeInfo();
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);

function maxErr(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('ssdScan (reference) is the Mamba2 recurrence', () => {
  it('one head, two tokens, by hand in f64', () => {
    const p: SsdParams = {
      numHeads: 1,
      headDim: 1,
      stateSize: 2,
      nGroups: 1,
      a: Float32Array.of(-0.5),
      d: Float32Array.of(0.25),
      dtBias: Float32Array.of(0.1),
      dtMin: 0,
      dtMax: 0.9,
    };
    const x = Float32Array.of(1.5, -2);
    const dt = Float32Array.of(0.3, 3);
    const b = Float32Array.of(1, 2, -1, 0.5);
    const c = Float32Array.of(0.5, -1, 2, 1);
    const state = Float32Array.of(0.2, -0.4);
    const out = new Float32Array(2);
    referenceOps.ssdScan(x, dt, b, c, [{ qStart: 0, qLen: 2, slot: 0 }], p, state, out);
    const S = [0.2, -0.4];
    const want: number[] = [];
    for (let t = 0; t < 2; t++) {
      const step = Math.min(Math.max(Math.log1p(Math.exp(dt[t] + 0.1)), 0), 0.9);
      for (let n = 0; n < 2; n++) S[n] = S[n] * Math.exp(step * -0.5) + step * x[t] * b[t * 2 + n];
      want.push(S[0] * c[t * 2] + S[1] * c[t * 2 + 1] + 0.25 * x[t]);
    }
    assert.ok(maxErr(out, Float32Array.from(want)) < 1e-6);
    assert.ok(maxErr(state, Float32Array.from(S)) < 1e-6);
  });
});

describe('ssdScan chunked form matches the recurrence (lengths around the 64-token chunk, a state, groups, a batch)', () => {
  const r = rng(65);
  const lens = [150, 1, 64, 17, 65, 63, 129];
  const rows = lens.reduce((a, b) => a + b, 0);
  const seqs: RecurrentSeq[] = [];
  for (let i = 0, at = 0; i < lens.length; at += lens[i], i++) seqs.push({ qStart: at, qLen: lens[i], slot: (i * 3) % lens.length });
  const cases = (
    [
      [2, 4, 4, 1, 0, Infinity],
      [6, 5, 19, 3, 0.001, Infinity],
      [8, 16, 64, 2, 0.01, 0.2],
      [2, 64, 128, 1, 0, Infinity],
    ] as const
  ).map(([H, P, N, G, dtMin, dtMax]) => ({
    params: {
      numHeads: H,
      headDim: P,
      stateSize: N,
      nGroups: G,
      a: randomF32(r, H).map((v) => -Math.exp(v)),
      d: randomF32(r, H),
      dtBias: randomF32(r, H),
      dtMin,
      dtMax,
    } satisfies SsdParams,
    x: randomF32(r, rows * H * P),
    dt: randomF32(r, rows * H, 3),
    b: randomF32(r, rows * G * N),
    c: randomF32(r, rows * G * N),
    state0: randomF32(r, lens.length * H * P * N),
  }));
  type Case = (typeof cases)[number];
  const run = (op: Ops['ssdScan'], k: Case, ss: readonly RecurrentSeq[] = seqs): { out: Float32Array; state: Float32Array } => {
    const state = k.state0.slice();
    const out = new Float32Array(rows * k.params.numHeads * k.params.headDim);
    op(k.x, k.dt, k.b, k.c, ss, k.params, state, out);
    return { out, state };
  };
  const want = cases.map((k) => run(referenceOps.ssdScan, k));
  const shape = (k: Case): string => `(${k.params.numHeads}, ${k.params.headDim}, ${k.params.stateSize}, ${k.params.nGroups})`;

  it('reference chunked form', () => {
    cases.forEach((k, i) => {
      const got = run(ssdScanChunked, k);
      const eo = maxErr(got.out, want[i].out) / maxAbs(want[i].out),
        es = maxErr(got.state, want[i].state) / maxAbs(want[i].state);
      console.log(`# reference chunked ssdScan ${shape(k)}: out ${eo.toExponential(2)}, state ${es.toExponential(2)} (relative)`);
      assert.ok(eo <= 1e-6 && es <= 1e-6, `out ${eo}, state ${es}`);
    });
  });
  for (const path of PATHS) {
    it(`native ${path}: chunked form, batch invariance, a split at a chunk boundary`, () => {
      setCpuPath(path);
      setChunkedRecurrence(0);
      try {
        cases.forEach((k, i) => {
          const got = run(nativeOps.ssdScan, k);
          const eo = maxErr(got.out, want[i].out) / maxAbs(want[i].out),
            es = maxErr(got.state, want[i].state) / maxAbs(want[i].state);
          console.log(`# native ${path} chunked ssdScan ${shape(k)}: out ${eo.toExponential(2)}, state ${es.toExponential(2)} (relative)`);
          assert.ok(eo <= 2e-6 && es <= 2e-6, `out ${eo}, state ${es}`);
          const { numHeads: H, headDim: P, stateSize: N } = k.params;
          const slotOf = (st: Float32Array, slot: number): Float32Array => st.subarray(slot * H * P * N, (slot + 1) * H * P * N);
          for (const s of seqs) {
            const alone = run(nativeOps.ssdScan, k, [s]);
            const rowsOf = (o: Float32Array): Float32Array => o.subarray(s.qStart * H * P, (s.qStart + s.qLen) * H * P);
            assert.equal(maxErr(rowsOf(alone.out), rowsOf(got.out)), 0, `rows of ${JSON.stringify(s)}`);
            assert.equal(maxErr(slotOf(alone.state, s.slot), slotOf(got.state, s.slot)), 0, `state of ${JSON.stringify(s)}`);
          }
          const first = seqs[0];
          const split = run(nativeOps.ssdScan, k, [{ ...first, qLen: 64 }]);
          const out2 = new Float32Array(got.out.length);
          nativeOps.ssdScan(k.x, k.dt, k.b, k.c, [{ ...first, qStart: first.qStart + 64, qLen: 86 }], k.params, split.state, out2);
          assert.equal(maxErr(slotOf(split.state, first.slot), slotOf(got.state, first.slot)), 0, 'split at a chunk boundary');
        });
      } finally {
        setCpuPath(info.bestCpuPath);
        setChunkedRecurrence(DEFAULT_CHUNKED_MIN_TOKENS);
      }
    });
  }
});

describe('mamba ops native match the reference (random shapes, groups, dt clamps, several sequences and slots)', () => {
  for (const path of PATHS) {
    describe(path, () => {
      before(() => setCpuPath(path));
      after(() => setCpuPath(info.bestCpuPath));
      it('ssdScan and causalConv1d with a bias', () => {
        const r = rng(22);
        for (const [H, P, N, G, dtMin, dtMax] of [
          [2, 4, 4, 1, 0, Infinity],
          [6, 5, 19, 3, 0.001, Infinity],
          [8, 16, 64, 2, 0.01, 0.2],
          [4, 8, 128, 4, 0, Infinity],
        ]) {
          const seqs: RecurrentSeq[] = [
            { qStart: 0, qLen: 5, slot: 2 },
            { qStart: 5, qLen: 1, slot: 0 },
            { qStart: 6, qLen: 3, slot: 1 },
          ];
          const rows = 9;
          const params: SsdParams = {
            numHeads: H,
            headDim: P,
            stateSize: N,
            nGroups: G,
            a: randomF32(r, H).map((v) => -Math.exp(v)),
            d: randomF32(r, H),
            dtBias: randomF32(r, H),
            dtMin,
            dtMax,
          };
          const x = randomF32(r, rows * H * P),
            dt = randomF32(r, rows * H, 3),
            b = randomF32(r, rows * G * N),
            c = randomF32(r, rows * G * N);
          const s0 = randomF32(r, 3 * H * P * N);
          const [sRef, sNat] = [s0.slice(), s0.slice()];
          const [oRef, oNat] = [new Float32Array(rows * H * P), new Float32Array(rows * H * P)];
          referenceOps.ssdScan(x, dt, b, c, seqs, params, sRef, oRef);
          nativeOps.ssdScan(x, dt, b, c, seqs, params, sNat, oNat);
          assert.ok(maxErr(oNat, oRef) <= 1e-5 * maxAbs(oRef), `ssd out ${maxErr(oNat, oRef)} (${H}, ${P}, ${N}, ${G})`);
          assert.ok(maxErr(sNat, sRef) <= 1e-5 * maxAbs(sRef), `ssd state ${maxErr(sNat, sRef)}`);
          const channels = H * P + 2 * G * N;
          const kernel = 4;
          const xc = randomF32(r, rows * channels);
          const w = randomF32(r, kernel * channels);
          const bias = randomF32(r, channels);
          const c0 = randomF32(r, 3 * (kernel - 1) * channels);
          const [cRef, cNat] = [c0.slice(), c0.slice()];
          const [yRef, yNat] = [new Float32Array(rows * channels), new Float32Array(rows * channels)];
          referenceOps.causalConv1d(xc, channels, kernel, w, seqs, cRef, yRef, bias);
          nativeOps.causalConv1d(xc, channels, kernel, w, seqs, cNat, yNat, bias);
          assert.ok(maxErr(yNat, yRef) <= 1e-5 * maxAbs(yRef), `conv out ${maxErr(yNat, yRef)}`);
          assert.equal(maxErr(cNat, cRef), 0, 'conv state');
          // The bias shifts the pre-activation: without it the outputs differ.
          const noBias = new Float32Array(rows * channels);
          referenceOps.causalConv1d(xc, channels, kernel, w, seqs, c0.slice(), noBias);
          assert.ok(maxErr(noBias, yRef) > 1e-3);
        }
      });
      it('ssdScan rejects a bad layout', () => {
        const p: SsdParams = {
          numHeads: 3,
          headDim: 1,
          stateSize: 1,
          nGroups: 2,
          a: new Float32Array(3),
          d: new Float32Array(3),
          dtBias: new Float32Array(3),
          dtMin: 0,
          dtMax: 1,
        };
        const z = new Float32Array(3);
        assert.throws(() => nativeOps.ssdScan(z, z.slice(), z.slice(), z.slice(), [], p, z.slice(), new Float32Array(3)), /multiple/);
        const ok = { ...p, nGroups: 1 };
        assert.throws(
          () =>
            nativeOps.ssdScan(z, z.slice(), z.slice(), z.slice(), [{ qStart: 0, qLen: 1, slot: 1 }], ok, z.slice(), new Float32Array(3)),
          /slot/,
        );
      });
    });
  }
});
