// GPT-OSS against Hugging Face logits (tiny float64 references from /work/shared/models/arch-fixtures/
// neural-api-gpt_oss: an f32 checkpoint and an MXFP4 one), on the reference and the native ops, through
// the paged KV cache; its config.json reading (YaRN, layer types); the MXFP4 dequantization against a
// plain reading of the OCP MX spec; and the op options it added (attention sinks; ops.moe's expert
// biases and clamped SwiGLU) native against the reference on every kernel path this CPU has.
//
// Tolerances. Errors are max |ours − HF| / max |HF logit| over every position of every sequence:
//   whole-sequence prefill and the paged path (prefill 5 → chunk 4 → one token a step, two sequences
//   per batch, non-contiguous blocks of 3; the fixture's sliding window is 4 of 16 positions): 1e-4 on
//   either ops, both checkpoints.
//   ops, native vs reference: attention with sinks 2e-5 of max |out|; moe with biases and the clamped
//   SwiGLU 2e-5 of max |out| for f32 weights, 1e-4 for bf16 (the same bf16 weights on both sides: what
//   differs is summation order and the f32 sigmoid).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { pagedRows, referenceRelError, prefillRows, readReferenceLogits, type ReferenceLogits } from '../helpers/paged-run.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { llamaConfig } from '../helpers/model-config.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import type { AttentionSeq, KvLayer, MoeExperts, Ops, WeightMatrix } from '../../src/kernels/ops.js';
import { f32ToBf16 } from '../../src/kernels/dequant.js';
import { createModel } from '../../src/model/architectures/index.js';
import { DecoderTransformer } from '../../src/model/architectures/decoder.js';
import { gptOss } from '../../src/model/architectures/gpt-oss.js';
import { yarnRopeFrequencies } from '../../src/model/architectures/yarn.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { dequantizeMxfp4, FP4_VALUES } from '../../src/model/loaders/mxfp4.js';
import { configFromHf, ModelConfigError } from '../../src/model/model-config.js';
import type { Checkpoint } from '../../src/model/types.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';

const DIR = resolve(MODELS, 'arch-fixtures', 'neural-api-gpt_oss');
const VARIANTS = ['tiny_gpt_oss', 'tiny_gpt_oss_mxfp4'] as const;
type Variant = (typeof VARIANTS)[number];
const CONFIG = resolve(DIR, 'tiny_gpt_oss_config.json');
const configJson = () => JSON.parse(readFileSync(CONFIG, 'utf8')) as Record<string, unknown>;

function checkpoint(v: Variant): Checkpoint {
  return loadSafetensorsCheckpoint({ files: [resolve(DIR, `${v}.safetensors`)], configPath: CONFIG, fastLoad: true });
}

const references = new Map<Variant, ReferenceLogits>();
function reference(v: Variant): ReferenceLogits {
  let ref = references.get(v);
  if (!ref) references.set(v, (ref = readReferenceLogits(resolve(DIR, `${v}_logits.json`))));
  return ref;
}

const TOL = 1e-4;

describe('GPT-OSS against Hugging Face logits', () => {
  for (const v of VARIANTS) {
    for (const ops of [referenceOps, nativeOps] as Ops[]) {
      it(`${v} on ${ops.name} ops: prefill of each sequence and the paged prefill → chunk → decode path within ${TOL} relative`, () => {
        const ref = reference(v);
        const model = createModel(checkpoint(v), ops);
        assert.equal(model.config.architecture, 'gpt_oss');
        assert.ok(
          ref.sequences.every((s) => s.length > 2 * (model.config.slidingWindow ?? Infinity)),
          'the window is exercised',
        );
        const prefill = referenceRelError(ref, prefillRows(model, ref));
        const paged = referenceRelError(ref, [...pagedRows(model, ref, [0, 1]), ...pagedRows(model, ref, [2, 0])]);
        console.log(`# ${v} (${ops.name}): max relative logit error prefill ${prefill.toExponential(2)}, paged ${paged.toExponential(2)}`);
        assert.ok(prefill < TOL, `prefill error ${prefill}`);
        assert.ok(paged < TOL, `paged error ${paged}`);
      });
    }
  }

  it('the fixture exercises sinks, YaRN, sliding layers and the clamped SwiGLU: without each the logits no longer match', () => {
    const ck = checkpoint('tiny_gpt_oss');
    const ref = reference('tiny_gpt_oss');
    const base = gptOss.decoderOptions(ck.config);
    const errorWith = (change: (o: typeof base) => typeof base): number =>
      referenceRelError(ref, prefillRows(new DecoderTransformer(ck, referenceOps, change(base)), ref));
    assert.ok(errorWith((o) => o) < TOL);
    assert.ok(errorWith((o) => ({ ...o, attentionSinks: false })) > 1e-2, 'sinks');
    assert.ok(errorWith((o) => ({ ...o, ropeFrequencies: undefined })) > 1e-2, 'YaRN');
    assert.ok(errorWith((o) => ({ ...o, layerSlidingWindow: undefined })) > 1e-2, 'sliding layers');
  });
});

describe('config.json reading', () => {
  it('the fixture: layer types, window, YaRN from rope_parameters (truncate false), biases, experts', () => {
    const c = configFromHf(configJson());
    assert.equal(c.architecture, 'gpt_oss');
    assert.deepEqual(c.layerAttention, ['sliding', 'full']);
    assert.equal(c.slidingWindow, 4);
    assert.equal(c.ropeTheta, 10000);
    assert.deepEqual(c.yarnRope, { factor: 4, originalMaxPositionEmbeddings: 4, betaFast: 32, betaSlow: 1, truncate: false });
    assert.equal(c.swigluLimit, 7);
    assert.equal(c.attentionBias, true);
    assert.equal(c.numExperts, 4);
    assert.equal(c.numExpertsPerTok, 2);
    assert.equal(c.moeIntermediateSize, 32);
    assert.equal(c.normTopkProb, true);
    assert.deepEqual(c.moeLayers, [true, true]);
    const o = gptOss.decoderOptions(c);
    assert.deepEqual(o.layerSlidingWindow, [4, null]);
  });

  it('YaRN frequencies and attention factor as _compute_yarn_parameters (f64 re-derivation, truncate on and off)', () => {
    const dim = 10,
      theta = 10000;
    for (const truncate of [false, true]) {
      const y = { factor: 4, originalMaxPositionEmbeddings: 4, betaFast: 32, betaSlow: 1, truncate };
      const got = yarnRopeFrequencies(dim, theta, y);
      const corr = (rot: number) => (dim * Math.log(4 / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
      let low = corr(32),
        high = corr(1);
      if (truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
      [low, high] = [Math.max(low, 0), Math.min(high, dim - 1)];
      if (low === high) high += 0.001;
      for (let k = 0; k < dim / 2; k++) {
        const extra = theta ** (-(2 * k) / dim);
        const ramp = Math.min(1, Math.max(0, (k - low) / (high - low)));
        const want = (extra / 4) * ramp + extra * (1 - ramp);
        assert.ok(Math.abs(got.invFreq[k] - want) <= 1e-6 * want, `truncate ${truncate} k ${k}: ${got.invFreq[k]} vs ${want}`);
      }
      assert.ok(Math.abs(got.scale - (0.1 * Math.log(4) + 1)) < 1e-12);
    }
    // mscale / mscale_all_dim ratio (DeepSeek-style) and a given attention factor.
    const m = yarnRopeFrequencies(dim, theta, {
      factor: 40,
      originalMaxPositionEmbeddings: 4096,
      betaFast: 32,
      betaSlow: 1,
      truncate: true,
      mscale: 0.707,
      mscaleAllDim: 0.707,
    });
    assert.equal(m.scale, 1);
    const a = yarnRopeFrequencies(dim, theta, {
      factor: 4,
      originalMaxPositionEmbeddings: 4,
      betaFast: 32,
      betaSlow: 1,
      truncate: true,
      attentionFactor: 1.5,
    });
    assert.equal(a.scale, 1.5);
  });

  it('transformers 4 keys (rope_theta + rope_scaling), defaults, layer_types pattern; other rope types refused', () => {
    const raw = configJson();
    delete raw.rope_parameters;
    delete raw.layer_types;
    const c = configFromHf({
      ...raw,
      num_hidden_layers: 4,
      rope_theta: 150000,
      rope_scaling: { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 4096 },
    });
    assert.equal(c.ropeTheta, 150000);
    assert.deepEqual(c.yarnRope, { factor: 32, originalMaxPositionEmbeddings: 4096, betaFast: 32, betaSlow: 1, truncate: true });
    assert.deepEqual(c.layerAttention, ['sliding', 'full', 'sliding', 'full']);
    const d = configFromHf({ architectures: ['GptOssForCausalLM'], vocab_size: 13, rope_theta: 150000 });
    assert.equal(d.hiddenSize, 2880);
    assert.equal(d.numExperts, 128);
    assert.equal(d.numExpertsPerTok, 4);
    assert.equal(d.slidingWindow, 128);
    assert.equal(d.yarnRope, undefined);
    assert.throws(
      () => configFromHf({ ...configJson(), rope_parameters: { rope_type: 'linear', factor: 2, rope_theta: 1e4 } }),
      ModelConfigError,
    );
    assert.throws(() => configFromHf({ ...configJson(), layer_types: ['sliding_attention'] }), ModelConfigError);
  });
});

describe('MXFP4 experts', () => {
  /** The OCP MX spec read plainly: E2M1 = sign, 2-bit exponent (bias 1), 1-bit mantissa; E8M0 = 2^(s − 127). */
  function e2m1(code: number): number {
    const sign = code & 8 ? -1 : 1;
    const e = (code >> 1) & 3,
      m = code & 1;
    return sign * (e === 0 ? m * 0.5 : 2 ** (e - 1) * (1 + m / 2));
  }

  it('the FP4 table and dequantizeMxfp4 follow the spec, low nibble first', () => {
    for (let c = 0; c < 16; c++) assert.equal(FP4_VALUES[c], e2m1(c));
    const rand = rng(3);
    const rows = 3,
      groups = 2;
    const blocks = Uint8Array.from({ length: rows * groups * 16 }, () => Math.floor(rand() * 256));
    const scales = Uint8Array.from([127, 120, 130, 1, 254, 127]);
    const out = new Float32Array(rows * groups * 32);
    dequantizeMxfp4(blocks, scales, rows, groups, out);
    for (let r = 0; r < rows; r++)
      for (let i = 0; i < groups * 32; i++) {
        const g = Math.floor(i / 32),
          j = i % 32;
        const byte = blocks[(r * groups + g) * 16 + (j >> 1)];
        const want = e2m1(j & 1 ? byte >> 4 : byte & 15) * 2 ** (scales[r * groups + g] - 127);
        assert.equal(out[r * groups * 32 + i], Math.fround(want));
      }
  });

  it('the loaded checkpoint: blocks / scales become bf16 [E, cols, rows] tensors equal to the spec; other tensors are the f32 checkpoint’s', () => {
    const m = checkpoint('tiny_gpt_oss_mxfp4');
    const f = checkpoint('tiny_gpt_oss');
    const file = readFileSync(resolve(DIR, 'tiny_gpt_oss_mxfp4.safetensors'));
    const headerLen = Number(file.readBigUInt64LE(0));
    const header = JSON.parse(file.subarray(8, 8 + headerLen).toString('utf8')) as Record<
      string,
      { shape: number[]; data_offsets: [number, number] }
    >;
    const raw = (name: string) =>
      new Uint8Array(file.subarray(8 + headerLen + header[name].data_offsets[0], 8 + headerLen + header[name].data_offsets[1]));
    let worst = 0;
    for (const name of ['model.layers.0.mlp.experts.gate_up_proj', 'model.layers.1.mlp.experts.down_proj']) {
      const t = m.tensors.get(name)!;
      const [E, R, G] = header[`${name}_blocks`].shape;
      assert.equal(t.dtype, 'bf16');
      assert.deepEqual(t.shape, [E, G * 32, R]);
      assert.deepEqual(f.tensors.get(name)!.shape, t.shape, 'the f32 checkpoint’s layout');
      const blocks = raw(`${name}_blocks`),
        scales = raw(`${name}_scales`);
      const bits = new Uint16Array(t.data.buffer, t.data.byteOffset, t.data.length / 2);
      const f32 = new Float32Array(f.tensors.get(name)!.data.buffer, f.tensors.get(name)!.data.byteOffset, bits.length);
      for (let e = 0; e < E; e++)
        for (let r = 0; r < R; r++)
          for (let c = 0; c < G * 32; c++) {
            const b = (e * R + r) * G + (c >> 5);
            const byte = blocks[b * 16 + ((c & 31) >> 1)];
            const want = e2m1(c & 1 ? byte >> 4 : byte & 15) * 2 ** (scales[b] - 127);
            const at = (e * G * 32 + c) * R + r;
            assert.equal(bits[at], f32ToBf16(want));
            worst = Math.max(worst, Math.abs(want - f32[at]));
          }
    }
    // The MXFP4 experts are a (saturating) quantization of the f32 checkpoint's; everything else is identical.
    console.log(`# MXFP4 experts vs the f32 checkpoint's: max |difference| ${worst.toFixed(3)}`);
    for (const [name, t] of f.tensors)
      if (!name.includes('.experts.gate_up_proj') && !name.includes('.experts.down_proj'))
        assert.deepEqual(m.tensors.get(name)!.data, t.data, name);
  });
});

// ---- the ops, native against the reference on every path ----

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);
const measured = new Map<string, number>();
const note = (op: string, err: number) => measured.set(op, Math.max(measured.get(op) ?? 0, err));

function assertClose(got: Float32Array, want: Float32Array, tol: number, what: string, op: string): void {
  let err = 0;
  for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i] - want[i]));
  assert.ok(err <= tol * maxAbs(want), `${what}: max error ${err} (scale ${maxAbs(want)})`);
  if (maxAbs(want) > 0) note(op, err / maxAbs(want));
}

function filledCache(ops: Ops, kvLens: number[], blockSize: number, seed: number): { layer: KvLayer; tables: Int32Array[] } {
  const numKvHeads = 2,
    headDim = 24;
  const perSeq = Math.max(...kvLens.map((l) => Math.ceil(l / blockSize)));
  const config = llamaConfig({ numLayers: 1, numKvHeads, headDim, numHeads: 6 });
  const [layer] = allocateKvCache(config, perSeq * kvLens.length, blockSize, 'f32');
  const tables = kvLens.map((_, s) => Int32Array.from({ length: perSeq }, (_, b) => (perSeq - 1 - b) * kvLens.length + s));
  const rand = rng(seed);
  kvLens.forEach((len, s) => {
    const slots = Int32Array.from({ length: len }, (_, t) => tables[s][Math.floor(t / blockSize)] * blockSize + (t % blockSize));
    ops.storeKv(layer, randomF32(rand, len * numKvHeads * headDim, 2), randomF32(rand, len * numKvHeads * headDim), len, slots);
  });
  return { layer, tables };
}

function matrix(rand: () => number, rows: number, cols: number, dtype: 'f32' | 'bf16', amp: number): WeightMatrix {
  const v = randomF32(rand, rows * cols, amp);
  const data = dtype === 'f32' ? new Uint8Array(v.buffer) : new Uint8Array(Uint16Array.from(v, f32ToBf16).buffer);
  return { dtype, rows, cols, data };
}

for (const path of PATHS) {
  describe(`new ops on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => {
      setCpuPath(info.bestCpuPath);
      const worst = [...measured].map(([op, e]) => `${op} ${e.toExponential(2)}`).join(', ');
      console.log(`# ${path}: worst native vs reference error (relative to max |out|) ${worst}`);
      measured.clear();
    });

    it('attention with sinks (sliding window or not, sinks above and below the scores) matches the reference; sinks change it', () => {
      const numHeads = 6,
        headDim = 24;
      const kvLens = [37, 5, 20];
      const qLens = [37, 1, 3];
      const { layer, tables } = filledCache(referenceOps, kvLens, 4, 7);
      const seqs: AttentionSeq[] = [];
      let rows = 0;
      kvLens.forEach((kvLen, s) => {
        seqs.push({ qStart: rows, qLen: qLens[s], kvLen, blockTable: tables[s] });
        rows += qLens[s];
      });
      const q = randomF32(rng(11), rows * numHeads * headDim, 2);
      const sinks = Float32Array.from([-3, 0, 0.5, 2, 8, 30]);
      for (const slidingWindow of [null, 6]) {
        const params = { numHeads, scale: 24 ** -0.5, slidingWindow, sinks };
        const want = new Float32Array(q.length),
          got = new Float32Array(q.length),
          plain = new Float32Array(q.length);
        referenceOps.attention(q, layer, seqs, params, want);
        nativeOps.attention(q, layer, seqs, params, got);
        assertClose(got, want, 2e-5, `sinks, window ${slidingWindow}`, 'attention');
        nativeOps.attention(q, layer, seqs, { ...params, sinks: undefined }, plain);
        assert.ok(maxAbs(plain.map((v, i) => v - want[i])) > 1e-2, 'sinks have an effect');
      }
      assert.throws(() =>
        nativeOps.attention(q, layer, seqs, { numHeads, scale: 0.2, slidingWindow: null, sinks: new Float32Array(2) }, q.slice()),
      );
    });

    it('moe with expert biases and the clamped SwiGLU (f32 and bf16 weights, held and missing experts) matches the reference', () => {
      const hidden = 64,
        inter = 96,
        E = 5,
        k = 2;
      for (const dtype of ['f32', 'bf16'] as const) {
        const rand = rng(dtype === 'f32' ? 5 : 6);
        const gate = Array.from({ length: E }, () => matrix(rand, inter, hidden, dtype, 0.5));
        const up = Array.from({ length: E }, () => matrix(rand, inter, hidden, dtype, 0.5));
        const down = Array.from({ length: E }, () => matrix(rand, hidden, inter, dtype, 0.3));
        const bias = {
          gate: Array.from({ length: E }, (_, e) => (e === 1 ? null : randomF32(rand, inter, 3))),
          up: Array.from({ length: E }, () => randomF32(rand, inter, 3)),
          down: Array.from({ length: E }, () => randomF32(rand, hidden, 1)),
        };
        const experts: MoeExperts = {
          gate: gate.map((g, e) => (e === 3 ? null : g)),
          up,
          down,
          bias,
          activation: { kind: 'clamped-swiglu', alpha: 1.702, limit: 7 },
        };
        for (const n of [1, 7, 70]) {
          const x = randomF32(rand, n * hidden, 2);
          const ids = Int32Array.from({ length: n * k }, () => Math.floor(rand() * E));
          const weights = Float32Array.from({ length: n * k }, () => rand());
          const want = new Float32Array(n * hidden),
            got = new Float32Array(n * hidden);
          referenceOps.moe(x, n, experts, ids, weights, k, want);
          nativeOps.moe(x, n, experts, ids, weights, k, got);
          assertClose(got, want, dtype === 'f32' ? 2e-5 : 1e-4, `${dtype} n ${n}`, `moe ${dtype}`);
          // The options change the result (gate and up values beyond ±7 here, so the clamp bites).
          if (n < 70) continue;
          const plain = new Float32Array(n * hidden);
          referenceOps.moe(x, n, { gate: experts.gate, up, down }, ids, weights, k, plain);
          assert.ok(maxAbs(plain.map((v, i) => v - want[i])) > 1e-2);
        }
      }
    });
  });
}

describe('the options are off by default', () => {
  it('AttentionParams without sinks and MoeExperts without bias / activation run as before (native: same bits as sinks undefined)', () => {
    const { layer, tables } = filledCache(nativeOps, [9], 4, 2);
    const seqs: AttentionSeq[] = [{ qStart: 0, qLen: 9, kvLen: 9, blockTable: tables[0] }];
    const q = randomF32(rng(1), 9 * 6 * 24);
    const a = new Float32Array(q.length),
      b = new Float32Array(q.length);
    nativeOps.attention(q, layer, seqs, { numHeads: 6, scale: 0.2, slidingWindow: null }, a);
    nativeOps.attention(q, layer, seqs, { numHeads: 6, scale: 0.2, slidingWindow: null, sinks: undefined }, b);
    assert.deepEqual(a, b);
  });
});
