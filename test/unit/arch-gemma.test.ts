// Gemma 2, Gemma 3 (text) and OLMo 2 against Hugging Face logits (tiny float64 references from
// /work/shared/models/arch-fixtures), on the reference and the native ops, through the paged KV cache;
// their config.json reading; and the ops they added (attention soft-capping, geluMul, softcap, linear
// RoPE scaling) native against the reference on every kernel path this CPU has.
//
// Tolerances. The references are float64; svc computes in f32. Errors are measured as
// max |ours − HF| / max |HF logit| over every position of every sequence:
//   whole-sequence prefill and the paged paths (prefill → chunk → token-by-token decode, non-contiguous
//   blocks, two sequences per batch): 1e-4 on either ops.
//   ops, native vs reference: attention with soft-cap 2e-5 (as native-ops' attention); geluMul, softcap
//   per element 2e-5 · |y| + 1e-6 · cap (tanh near 0 keeps relative precision); rope with a factor 1e-5.
import { linearRopeInvFreq } from '../../src/model/architectures/rotary.js';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { pagedRows, referenceRelError, prefillRows, readReferenceLogits, type ReferenceLogits } from '../helpers/paged-run.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import type { AttentionSeq, KvLayer, Ops } from '../../src/kernels/ops.js';
import { createModel } from '../../src/model/architectures/index.js';
import { DecoderTransformer, type DecoderOptions } from '../../src/model/architectures/decoder.js';
import { gemma2, gemma3 } from '../../src/model/architectures/gemma.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { configFromHf, ModelConfigError } from '../../src/model/model-config.js';
import type { Checkpoint } from '../../src/model/types.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import { llamaConfig } from '../helpers/model-config.js';

const ARCH_FIXTURES = resolve(MODELS, 'arch-fixtures');
const NAMES = ['gemma2', 'gemma3', 'olmo2'] as const;
type Name = (typeof NAMES)[number];

const dirOf = (name: Name) => resolve(ARCH_FIXTURES, `neural-api-${name}`);
const configJson = (name: Name) =>
  JSON.parse(readFileSync(resolve(dirOf(name), `tiny_${name}_config.json`), 'utf8')) as Record<string, unknown>;

function checkpoint(name: Name): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(dirOf(name), `tiny_${name}.safetensors`)],
    configPath: resolve(dirOf(name), `tiny_${name}_config.json`),
    fastLoad: true,
  });
}

const references = new Map<Name, ReferenceLogits>();
function reference(name: Name): ReferenceLogits {
  let ref = references.get(name);
  if (!ref) references.set(name, (ref = readReferenceLogits(resolve(dirOf(name), `tiny_${name}_logits.json`))));
  return ref;
}

const TOL = 1e-4;

describe('Gemma 2 / Gemma 3 / OLMo 2 against Hugging Face logits', () => {
  for (const name of NAMES) {
    for (const ops of [referenceOps, nativeOps] as Ops[]) {
      it(`${name} on ${ops.name} ops: prefill of each sequence and the paged prefill → chunk → decode path within ${TOL} relative`, () => {
        const ref = reference(name);
        const model = createModel(checkpoint(name), ops);
        assert.equal(model.config.architecture, name);
        const prefill = referenceRelError(ref, prefillRows(model, ref));
        const paged = referenceRelError(ref, [...pagedRows(model, ref, [0, 1]), ...pagedRows(model, ref, [2, 0])]);
        console.log(
          `# ${name} (${ops.name}): max relative logit error prefill ${prefill.toExponential(2)}, paged ${paged.toExponential(2)}`,
        );
        assert.ok(prefill < TOL, `prefill error ${prefill}`);
        assert.ok(paged < TOL, `paged error ${paged}`);
      });
    }
  }
});

describe('the fixtures exercise each Gemma option: without it the logits no longer match', () => {
  const errorWith = (name: 'gemma2' | 'gemma3', change: (o: DecoderOptions) => DecoderOptions): number => {
    const ck = checkpoint(name);
    const module = name === 'gemma2' ? gemma2 : gemma3;
    const model = new DecoderTransformer(ck, referenceOps, change(module.decoderOptions(ck.config)));
    return referenceRelError(reference(name), prefillRows(model, reference(name)));
  };
  it('gemma2: attention soft-cap, final soft-cap, sliding layers, scale, (1 + w) norms, embedding scale, GELU', () => {
    assert.ok(errorWith('gemma2', (o) => o) < TOL);
    assert.ok(errorWith('gemma2', (o) => ({ ...o, attentionSoftcap: null })) > 1e-3, 'without the attention soft-cap');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, finalSoftcap: null })) > 1e-3, 'without the final soft-cap');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, layerSlidingWindow: [null, null] })) > 1e-3, 'every layer global');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, layerSlidingWindow: [null, 4] })) > 1e-3, 'the pattern the other way round');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, attentionScale: undefined })) > 1e-3, 'head_dim^-0.5 scale');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, normWeightOffset: 0 })) > 1e-3, 'w instead of 1 + w');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, embeddingScale: 1 })) > 1e-3, 'unscaled embeddings');
    assert.ok(errorWith('gemma2', (o) => ({ ...o, mlpActivation: 'erf' })) > 1e-5, 'exact GELU');
  });
  it('gemma3: sliding pattern, local RoPE base, q/k norms', () => {
    assert.ok(errorWith('gemma3', (o) => o) < TOL);
    assert.ok(errorWith('gemma3', (o) => ({ ...o, layerSlidingWindow: [4, 4, 4] })) > 1e-3, 'every layer sliding');
    const rope = (o: DecoderOptions) => o.layerRope ?? [];
    assert.ok(errorWith('gemma3', (o) => ({ ...o, layerRope: rope(o).map(() => ({ theta: 1000, linearFactor: 1 })) })) > 1e-3, 'one base');
    assert.ok(errorWith('gemma3', (o) => ({ ...o, layerRope: rope(o).map((r) => ({ ...r, linearFactor: 2 })) })) > 1e-3, 'scaled');
    assert.ok(errorWith('gemma3', (o) => ({ ...o, qkNorm: false })) > 1e-3, 'without q/k norms');
  });
});

describe('config.json reading', () => {
  it('gemma2 fixture: layer types alternate from a sliding one, soft-caps, scale, tied head, gelu tanh', () => {
    const c = configFromHf(configJson('gemma2'));
    assert.equal(c.architecture, 'gemma2');
    assert.deepEqual(c.layerAttention, ['sliding', 'full']);
    assert.equal(c.slidingWindow, 4);
    assert.equal(c.queryPreAttnScalar, 12);
    assert.equal(c.attnLogitSoftcapping, 5);
    assert.equal(c.finalLogitSoftcapping, 0.5);
    assert.equal(c.headDim, 6);
    assert.equal(c.tieWordEmbeddings, true);
    assert.equal(c.mlpGelu, 'tanh');
    assert.equal(c.ropeLocalTheta, undefined);
    const o = gemma2.decoderOptions(c);
    assert.deepEqual(o.layerSlidingWindow, [4, null]);
    assert.equal(o.attentionScale, 12 ** -0.5);
    assert.equal(o.embeddingScale, Math.fround(Math.sqrt(8)));
    assert.equal(o.normPlacement, 'sandwich');
    assert.equal(o.normWeightOffset, 1);
  });

  it('gemma2 defaults (Gemma2Config) fill what config.json leaves out; explicit nulls turn soft-caps off', () => {
    const c = configFromHf({ architectures: ['Gemma2ForCausalLM'], model_type: 'gemma2', num_hidden_layers: 4 });
    assert.equal(c.headDim, 256);
    assert.equal(c.hiddenSize, 2304);
    assert.equal(c.numKvHeads, 4);
    assert.equal(c.vocabSize, 256000);
    assert.equal(c.attnLogitSoftcapping, 50);
    assert.equal(c.finalLogitSoftcapping, 30);
    assert.equal(c.queryPreAttnScalar, 256);
    assert.equal(c.slidingWindow, 4096);
    assert.equal(c.ropeTheta, 10000);
    assert.deepEqual(c.layerAttention, ['sliding', 'full', 'sliding', 'full']);
    const off = configFromHf({ model_type: 'gemma2', attn_logit_softcapping: null, final_logit_softcapping: null });
    assert.equal(off.attnLogitSoftcapping, undefined);
    assert.equal(off.finalLogitSoftcapping, undefined);
    assert.equal(gemma2.decoderOptions(off).attentionSoftcap, null);
    const listed = configFromHf({
      model_type: 'gemma2',
      num_hidden_layers: 3,
      layer_types: ['full_attention', 'sliding_attention', 'full_attention'],
    });
    assert.deepEqual(listed.layerAttention, ['full', 'sliding', 'full']);
    assert.throws(() => configFromHf({ model_type: 'gemma2', num_hidden_layers: 2, layer_types: ['full_attention'] }), ModelConfigError);
    assert.throws(() => configFromHf({ model_type: 'gemma2', hidden_activation: 'relu' }), ModelConfigError);
    assert.equal(configFromHf({ model_type: 'gemma2', hidden_activation: 'gelu' }).mlpGelu, 'erf');
  });

  it('gemma3 fixture: sliding_window_pattern, local and global RoPE bases, no soft-caps', () => {
    const c = configFromHf(configJson('gemma3'));
    assert.equal(c.architecture, 'gemma3');
    assert.deepEqual(c.layerAttention, ['sliding', 'sliding', 'full']);
    assert.equal(c.ropeTheta, 1000);
    assert.equal(c.ropeLocalTheta, 10);
    assert.equal(c.ropeLinearFactor, undefined);
    assert.equal(c.attnLogitSoftcapping, undefined);
    assert.equal(c.finalLogitSoftcapping, undefined);
    const o = gemma3.decoderOptions(c);
    assert.equal(o.qkNorm, true);
    assert.deepEqual(o.layerRope, [
      { theta: 10, linearFactor: 1 },
      { theta: 10, linearFactor: 1 },
      { theta: 1000, linearFactor: 1 },
    ]);
  });

  it('gemma3: defaults (pattern 6, RoPE 1e6 / 1e4), rope_scaling linear on global layers, transformers 5 rope_parameters, the wrapper', () => {
    const d = configFromHf({
      architectures: ['Gemma3ForCausalLM'],
      num_hidden_layers: 12,
      rope_scaling: { rope_type: 'linear', factor: 8 },
    });
    assert.deepEqual(
      d.layerAttention,
      [...'sssssfsssssf'].map((t) => (t === 's' ? 'sliding' : 'full')),
    );
    assert.equal(d.ropeTheta, 1_000_000);
    assert.equal(d.ropeLocalTheta, 10000);
    assert.equal(d.ropeLinearFactor, 8);
    assert.equal(d.vocabSize, 262208);
    assert.deepEqual(gemma3.decoderOptions(d).layerRope?.slice(4, 7), [
      { theta: 10000, linearFactor: 1 },
      { theta: 1_000_000, linearFactor: 8 },
      { theta: 10000, linearFactor: 1 },
    ]);
    const v5 = configFromHf({
      model_type: 'gemma3_text',
      num_hidden_layers: 2,
      layer_types: ['sliding_attention', 'full_attention'],
      rope_parameters: {
        full_attention: { rope_type: 'linear', factor: 4, rope_theta: 500000 },
        sliding_attention: { rope_type: 'default', rope_theta: 20000 },
      },
    });
    assert.equal(v5.ropeTheta, 500000);
    assert.equal(v5.ropeLocalTheta, 20000);
    assert.equal(v5.ropeLinearFactor, 4);
    assert.throws(() => configFromHf({ model_type: 'gemma3_text', rope_scaling: { rope_type: 'yarn', factor: 4 } }), ModelConfigError);
    // A Gemma3ForConditionalGeneration config: its text_config runs as Gemma 3 text.
    const wrapped = configFromHf({
      architectures: ['Gemma3ForConditionalGeneration'],
      model_type: 'gemma3',
      text_config: {
        model_type: 'gemma3_text',
        hidden_size: 2560,
        num_hidden_layers: 34,
        sliding_window: 1024,
        rope_scaling: { rope_type: 'linear', factor: 8 },
      },
      vision_config: { model_type: 'siglip_vision_model' },
    });
    assert.equal(wrapped.architecture, 'gemma3');
    assert.equal(wrapped.hiddenSize, 2560);
    assert.equal(wrapped.slidingWindow, 1024);
    assert.equal(wrapped.ropeLinearFactor, 8);
    assert.equal(wrapped.layerAttention?.filter((t) => t === 'full').length, 5);
  });

  it('olmo2 fixture: rms_norm_eps, untied, no family fields; its options put the norms on the outputs', () => {
    const c = configFromHf(configJson('olmo2'));
    assert.equal(c.architecture, 'olmo2');
    assert.equal(c.rmsNormEps, 1e-5);
    assert.equal(c.tieWordEmbeddings, false);
    assert.equal(c.headDim, 4);
    assert.equal(c.layerAttention, undefined);
    assert.equal(
      configFromHf({
        model_type: 'olmo2',
        hidden_size: 8,
        intermediate_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        vocab_size: 4,
      }).rmsNormEps,
      1e-5,
    );
    const o = createModel(checkpoint('olmo2'), referenceOps) as DecoderTransformer;
    assert.ok(o instanceof DecoderTransformer);
  });
});

// ---- the ops, native against the reference on every path ----

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);

/** Worst error measured per op on this path (logged after each test). */
const measured = new Map<string, number>();
const note = (op: string, err: number) => measured.set(op, Math.max(measured.get(op) ?? 0, err));

/** Per element: |got − want| <= rel · |want| + abs. Notes the largest |got − want| / |want| (where want ≠ 0). */
function assertElementwise(got: Float32Array, want: Float32Array, rel: number, abs: number, what: string, op: string): void {
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]);
    assert.ok(err <= rel * Math.abs(want[i]) + abs, `${what}[${i}]: got ${got[i]}, want ${want[i]}`);
    if (want[i] !== 0) note(op, err / Math.abs(want[i]));
  }
}

/** max |got − want| <= tol · max |want|; notes that ratio. */
function assertClose(got: Float32Array, want: Float32Array, tol: number, what: string, op: string): void {
  let err = 0;
  for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i] - want[i]));
  assert.ok(err <= tol * maxAbs(want), `${what}: max error ${err} (scale ${maxAbs(want)})`);
  note(op, err / maxAbs(want));
}

/** A cache of `layer`'s shape with each sequence's blocks interleaved and reversed, filled with random k/v. */
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

for (const path of PATHS) {
  describe(`new ops on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => {
      setCpuPath(info.bestCpuPath);
      const worst = [...measured].map(([op, e]) => `${op} ${e.toExponential(2)}`).join(', ');
      console.log(
        `# ${path}: worst native vs reference error (attention, rope: relative to max |y|; softcap, geluMul: per element) ${worst}`,
      );
      measured.clear();
    });

    it('attention with a soft-cap and a custom scale (sliding window or not) matches the reference; softcap 0 / null is no soft-cap', () => {
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
      for (const slidingWindow of [null, 6]) {
        for (const softcap of [5, 50, 0.7]) {
          const params = { numHeads, scale: 12 ** -0.5, slidingWindow, softcap };
          const want = new Float32Array(q.length),
            got = new Float32Array(q.length);
          referenceOps.attention(q, layer, seqs, params, want);
          nativeOps.attention(q, layer, seqs, params, got);
          assertClose(got, want, 2e-5, `softcap ${softcap} window ${slidingWindow}`, 'attention');
          // The cap changes the result (scores here reach several units).
          const plain = new Float32Array(q.length);
          referenceOps.attention(q, layer, seqs, { ...params, softcap: null }, plain);
          if (softcap < 50) assert.ok(maxAbs(plain.map((v, i) => v - want[i])) > 1e-3, `softcap ${softcap} has an effect`);
        }
        const none = new Float32Array(q.length),
          zero = new Float32Array(q.length),
          nul = new Float32Array(q.length);
        nativeOps.attention(q, layer, seqs, { numHeads, scale: 0.2, slidingWindow }, none);
        nativeOps.attention(q, layer, seqs, { numHeads, scale: 0.2, slidingWindow, softcap: 0 }, zero);
        nativeOps.attention(q, layer, seqs, { numHeads, scale: 0.2, slidingWindow, softcap: null }, nul);
        assert.deepEqual(zero, none);
        assert.deepEqual(nul, none);
      }
      assert.throws(
        () => nativeOps.attention(q, layer, seqs, { numHeads, scale: 0.2, slidingWindow: null, softcap: -1 }, q.slice()),
        TypeError,
      );
    });

    it('softcap matches element by element (small values keep relative precision), in place, tails and parallel lengths', () => {
      const ramp = Float32Array.from({ length: 4001 }, (_, i) => (i - 2000) * 0.05); // [-100, 100]
      for (const cap of [0.5, 5, 30, 50]) {
        const want = new Float32Array(ramp.length),
          got = new Float32Array(ramp.length);
        referenceOps.softcap(ramp, want, ramp.length, cap);
        nativeOps.softcap(ramp, got, ramp.length, cap);
        assertElementwise(got, want, 2e-6, 0, `softcap ${cap}`, 'softcap');
      }
      const tiny = Float32Array.from({ length: 9 }, (_, i) => (i - 4) * 1e-6);
      const tw = new Float32Array(9),
        tg = new Float32Array(9);
      referenceOps.softcap(tiny, tw, 9, 30);
      nativeOps.softcap(tiny, tg, 9, 30);
      assertElementwise(tg, tw, 1e-6, 0, 'softcap near 0', 'softcap');
      for (const len of [1, 7, 15, 17, 33, 200_003]) {
        const x = randomF32(rng(len), len, 40);
        const w = new Float32Array(len),
          g = new Float32Array(len);
        referenceOps.softcap(x, w, len, 30);
        nativeOps.softcap(x, g, len, 30);
        assertElementwise(g, w, 2e-6, 1e-7, `softcap len ${len}`, 'softcap');
        nativeOps.softcap(x, x, len, 30);
        assert.deepEqual(x, g, `in place, len ${len}`);
      }
      assert.throws(() => nativeOps.softcap(ramp, ramp, ramp.length, 0), TypeError);
    });

    it('geluMul (tanh, erf, quick) matches element by element, out aliasing gate, at tails and parallel lengths', () => {
      for (const kind of ['tanh', 'erf', 'quick'] as const) {
        for (const len of [1, 7, 16, 31, 1000, 200_003]) {
          const gate = randomF32(rng(len + 1), len, 6);
          const up = randomF32(rng(len + 2), len, 3);
          const want = new Float32Array(len),
            got = new Float32Array(len);
          referenceOps.geluMul(gate, up, want, len, kind);
          nativeOps.geluMul(gate, up, got, len, kind);
          assertElementwise(got, want, 2e-5, 1e-7, `geluMul ${kind} len ${len}`, `geluMul ${kind}`);
          nativeOps.geluMul(gate, up, gate, len, kind);
          assert.deepEqual(gate, got, `geluMul ${kind} in place`);
        }
      }
      const a = new Float32Array(8);
      assert.throws(() => nativeOps.geluMul(a, a, a, 8, 'tanh'), TypeError);
    });

    it('rope with linear-scaled frequencies matches the reference, and factor 1 is plain rope', () => {
      const n = 9,
        heads = 3,
        hd = 16;
      const positions = Int32Array.from({ length: n }, (_, i) => i * 37 + 5);
      const x = randomF32(rng(3), n * heads * hd);
      const scaled = (factor: number) => ({ invFreq: linearRopeInvFreq(hd, 10000, factor) });
      for (const factor of [1, 8, 2.5]) {
        const want = x.slice(),
          got = x.slice();
        referenceOps.rope(want, n, heads, hd, positions, 10000, 'neox', scaled(factor));
        nativeOps.rope(got, n, heads, hd, positions, 10000, 'neox', scaled(factor));
        assertClose(got, want, 1e-5, `rope factor ${factor}`, 'rope');
      }
      // factor 8 at position p is the unscaled rotation at p / 8 (here positions that divide evenly).
      const p8 = Int32Array.from({ length: n }, (_, i) => i * 8);
      const p1 = Int32Array.from({ length: n }, (_, i) => i);
      const a = x.slice(),
        b = x.slice();
      nativeOps.rope(a, n, heads, hd, p8, 10000, 'neox', scaled(8));
      nativeOps.rope(b, n, heads, hd, p1, 10000, 'neox');
      assertClose(a, b, 1e-5, 'p / 8', 'rope p/8');
      const plain = x.slice(),
        one = x.slice();
      nativeOps.rope(plain, n, heads, hd, positions, 10000, 'neox');
      nativeOps.rope(one, n, heads, hd, positions, 10000, 'neox', scaled(1));
      assertClose(one, plain, 1e-7, 'factor 1', 'rope');
      // Alternating bases (Gemma 3's local / global layers) each keep their own table.
      const alt = x.slice();
      nativeOps.rope(alt, n, heads, hd, positions, 10, 'neox');
      nativeOps.rope(alt, n, heads, hd, positions, 10000, 'neox', scaled(8));
      const ref = x.slice();
      referenceOps.rope(ref, n, heads, hd, positions, 10, 'neox');
      referenceOps.rope(ref, n, heads, hd, positions, 10000, 'neox', scaled(8));
      assertClose(alt, ref, 1e-5, 'two bases in turn', 'rope');
      assert.throws(() => linearRopeInvFreq(hd, 10000, 0), RangeError);
    });
  });
}
