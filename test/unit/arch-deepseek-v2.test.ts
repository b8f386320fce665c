// DeepSeek-V2 (multi-head latent attention with the latent cached, DeepSeekMoE, YaRN) against Hugging
// Face logits (tiny float64 references from /work/shared/models/arch-fixtures), on the reference and
// the native ops, through the paged KV cache; its config.json reading; the latent KV layout and size;
// DeepSeek's routing; and the MLA ops, native against the reference on every kernel path this CPU has.
//
// Tolerances. The references are float64 (transformers 5); svc computes in f32. Errors are
// max |ours − HF| / max |HF logit| over every position of every sequence: 1e-4 for each sequence's
// prefill and for the paged path (prefill → chunk → token-by-token decode, non-contiguous blocks, two
// sequences per batch), on either ops (measured: ~3e-7 plain, ~5e-7 / 1.6e-6 YaRN reference / native).
// The YaRN fixture is compared with transformers 5's softmax scale ((nope + rope)^-0.5): svc's default
// multiplies it by YaRN's mscale(factor, mscale_all_dim)², as DeepSeek's code does (asserted to move
// the logits far off the fixture). MLA op, native vs reference: 2e-5 of max |out| for f32 / bf16
// (the reference decodes the same bf16 rows), 5e-5 for fp8 / nvfp4.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { pagedRows, referenceRelError, prefillRows, readReferenceLogits, type ReferenceLogits } from '../helpers/paged-run.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import type { AttentionSeq, KvDType, KvLayer, Ops } from '../../src/kernels/ops.js';
import { createModel } from '../../src/model/architectures/index.js';
import { DeepseekV2Model } from '../../src/model/architectures/deepseek-v2.js';
import { routeDeepseek } from '../../src/model/architectures/moe.js';
import { yarnMscale, yarnRopeInvFreq } from '../../src/model/architectures/yarn.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { configFromHf, ModelConfigError } from '../../src/model/model-config.js';
import type { Checkpoint, ModelConfig } from '../../src/model/types.js';
import { allocateKvCache, kvBytesPerToken } from '../../src/engine/kv-cache.js';
import { copyKvBlock, kvBytesPerBlock } from '../../src/engine/kv-blocks.js';

const ARCH_FIXTURES = resolve(MODELS, 'arch-fixtures');
const NAMES = ['deepseek_v2', 'deepseek_v2_yarn'] as const;
type Name = (typeof NAMES)[number];

const dirOf = (name: Name) => resolve(ARCH_FIXTURES, `neural-api-${name}`);
const configJson = (name: Name) =>
  JSON.parse(readFileSync(resolve(dirOf(name), `tiny_${name}_config.json`), 'utf8')) as Record<string, unknown>;

/** The fixture's checkpoint; `hfScale`: transformers 5's softmax scale (no YaRN mscale²), as its references were made. */
function checkpoint(name: Name, hfScale = true): Checkpoint {
  const ck = loadSafetensorsCheckpoint({
    files: [resolve(dirOf(name), `tiny_${name}.safetensors`)],
    configPath: resolve(dirOf(name), `tiny_${name}_config.json`),
    fastLoad: true,
  });
  const m = ck.config.mla;
  if (hfScale && m) ck.config.mla = { ...m, softmaxScale: (m.qkNopeHeadDim + m.qkRopeHeadDim) ** -0.5 };
  return ck;
}

const references = new Map<Name, ReferenceLogits>();
function reference(name: Name): ReferenceLogits {
  let ref = references.get(name);
  if (!ref) references.set(name, (ref = readReferenceLogits(resolve(dirOf(name), `tiny_${name}_logits.json`))));
  return ref;
}

const TOL = 1e-4;

describe('DeepSeek-V2 against Hugging Face logits', () => {
  for (const name of NAMES) {
    for (const ops of [referenceOps, nativeOps] as Ops[]) {
      it(`${name} on ${ops.name} ops: prefill of each sequence and the paged prefill → chunk → decode path within ${TOL} relative`, () => {
        const ref = reference(name);
        const model = createModel(checkpoint(name), ops);
        assert.ok(model instanceof DeepseekV2Model);
        assert.equal(model.config.architecture, 'deepseek_v2');
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

  it('a bf16 latent cache stays close (the latent rows rounded to bf16)', () => {
    const ref = reference('deepseek_v2');
    const model = createModel(checkpoint('deepseek_v2'), nativeOps);
    const err = referenceRelError(ref, pagedRows(model, ref, [0, 1], { dtype: 'bf16' }));
    console.log(`# deepseek_v2 (native, bf16 latent cache): paged ${err.toExponential(2)}`);
    assert.ok(err < 2e-2, `bf16 error ${err}`);
  });

  it("YaRN: DeepSeek's mscale² on the softmax scale (svc's default) moves the logits far from transformers 5's", () => {
    const ref = reference('deepseek_v2_yarn');
    const model = createModel(checkpoint('deepseek_v2_yarn', false), referenceOps);
    const err = referenceRelError(ref, prefillRows(model, ref));
    console.log(`# deepseek_v2_yarn with mscale²: ${err.toExponential(2)} from transformers 5`);
    assert.ok(err > 1e-2);
  });

  it('without YaRN frequencies or with plain routing the fixtures no longer match (each feature is exercised)', () => {
    const yarn = checkpoint('deepseek_v2_yarn');
    const m = yarn.config.mla;
    assert.ok(m?.yarn);
    yarn.config.mla = { ...m, yarn: undefined };
    assert.ok(
      referenceRelError(reference('deepseek_v2_yarn'), prefillRows(createModel(yarn, referenceOps), reference('deepseek_v2_yarn'))) > 1e-3,
    );
    const plain = checkpoint('deepseek_v2');
    plain.config.moeRouting = { scale: 1 };
    assert.ok(referenceRelError(reference('deepseek_v2'), prefillRows(createModel(plain, referenceOps), reference('deepseek_v2'))) > 1e-3);
  });
});

describe('DeepSeek-V2 config.json', () => {
  it('fixture: MLA shapes, dense first layer then MoE with shared experts, greedy routing scaled by 1.5', () => {
    const c = configFromHf(configJson('deepseek_v2'));
    assert.equal(c.architecture, 'deepseek_v2');
    assert.deepEqual(c.mla, { kvLoraRank: 5, qLoraRank: null, qkNopeHeadDim: 6, qkRopeHeadDim: 4, vHeadDim: 6, softmaxScale: 10 ** -0.5 });
    assert.equal(c.headDim, 10);
    assert.equal(c.numHeads, 2);
    assert.equal(c.numExperts, 4);
    assert.equal(c.numExpertsPerTok, 2);
    assert.equal(c.moeIntermediateSize, 5);
    assert.equal(c.sharedExpertIntermediateSize, 10);
    assert.equal(c.normTopkProb, false);
    assert.deepEqual(c.moeLayers, [false, true]);
    assert.deepEqual(c.moeRouting, { scale: 1.5 });
    assert.equal(c.rmsNormEps, 1e-5);
  });

  it('yarn fixture: YaRN parameters, attention factor mscale(4, 2) / mscale(4, 0.5), softmax scale times mscale(4, 0.5)²', () => {
    const c = configFromHf(configJson('deepseek_v2_yarn'));
    const y = c.mla?.yarn;
    assert.ok(y);
    assert.deepEqual(
      { ...y, attentionFactor: 0 },
      {
        factor: 4,
        originalMaxPositionEmbeddings: 4,
        betaFast: 32,
        betaSlow: 1,
        attentionFactor: 0,
        truncate: true,
      },
    );
    const f = (m: number) => 0.1 * m * Math.log(4) + 1;
    assert.ok(Math.abs(y.attentionFactor - f(2) / f(0.5)) < 1e-15);
    assert.ok(Math.abs((c.mla?.softmaxScale ?? 0) - 10 ** -0.5 * f(0.5) ** 2) < 1e-15);
    // dim 4: correction range [0, 0] (+ 0.001): frequency 0 extrapolated (plain), frequency 1 interpolated (/ 4).
    const inv = yarnRopeInvFreq(4, 10000, y);
    assert.equal(inv[0], 1);
    assert.equal(inv[1], Math.fround(1 / Math.fround(4 * Math.fround(Math.sqrt(10000) * 1))));
    assert.equal(yarnMscale(1, 3), 1);
  });

  it('YaRN inverse frequencies over a wider rotary part ramp from extrapolated to interpolated', () => {
    const y = { factor: 40, originalMaxPositionEmbeddings: 4096, betaFast: 32, betaSlow: 1, attentionFactor: 1, truncate: true };
    const inv = yarnRopeInvFreq(64, 10000, y);
    const plain = (k: number) => 1 / 10000 ** ((2 * k) / 64);
    // DeepSeek-V2's rope part: low = floor(10.2) = 10, high = ceil(22.9) = 23.
    for (let k = 0; k <= 10; k++) assert.ok(Math.abs(inv[k] / plain(k) - 1) < 1e-6, `k ${k}`);
    for (let k = 23; k < 32; k++) assert.ok(Math.abs((inv[k] * 40) / plain(k) - 1) < 1e-6, `k ${k}`);
    assert.ok(inv[16] < plain(16) && inv[16] > plain(16) / 40);
  });

  it('defaults (DeepseekV2Config), q_lora, group-limited greedy, moe_layer_freq; what svc cannot run is refused', () => {
    const d = configFromHf({ architectures: ['DeepseekV2ForCausalLM'], num_hidden_layers: 4, first_k_dense_replace: 1, moe_layer_freq: 2 });
    assert.deepEqual(d.mla, {
      kvLoraRank: 512,
      qLoraRank: 1536,
      qkNopeHeadDim: 128,
      qkRopeHeadDim: 64,
      vHeadDim: 128,
      softmaxScale: 192 ** -0.5,
    });
    assert.deepEqual(d.moeLayers, [false, false, true, false]);
    assert.equal(d.numExperts, 64);
    assert.equal(d.sharedExpertIntermediateSize, 2 * 1407);
    const g = configFromHf({
      model_type: 'deepseek_v2',
      topk_method: 'group_limited_greedy',
      n_group: 8,
      topk_group: 3,
      routed_scaling_factor: 16,
    });
    assert.deepEqual(g.moeRouting, { scale: 16, groups: { numGroups: 8, topkGroups: 3 } });
    const v5 = configFromHf({
      model_type: 'deepseek_v2',
      max_position_embeddings: 163840,
      rope_parameters: {
        rope_type: 'yarn',
        rope_theta: 10000,
        factor: 40,
        original_max_position_embeddings: 4096,
        mscale: 0.707,
        mscale_all_dim: 0.707,
      },
    });
    assert.equal(v5.mla?.yarn?.attentionFactor, 1);
    assert.ok(Math.abs((v5.mla?.softmaxScale ?? 0) / 192 ** -0.5 - (0.1 * 0.707 * Math.log(40) + 1) ** 2) < 1e-12);
    const dense = configFromHf({ model_type: 'deepseek_v2', n_routed_experts: null });
    assert.equal(dense.numExperts, undefined);
    for (const bad of [
      { scoring_func: 'sigmoid' },
      { topk_method: 'noaux_tc' },
      { topk_method: 'group_limited_greedy', n_group: 3, topk_group: 1 },
      { hidden_act: 'gelu' },
      { rope_scaling: { type: 'linear', factor: 2 } },
      { qk_rope_head_dim: 63 },
    ])
      assert.throws(() => configFromHf({ model_type: 'deepseek_v2', ...bad }), ModelConfigError, JSON.stringify(bad));
  });
});

describe('the latent KV cache', () => {
  const config = (): ModelConfig => configFromHf(configJson('deepseek_v2'));

  it('kvBytesPerToken is the latent row (kv_lora_rank + qk_rope_head_dim per layer), not expanded heads', () => {
    const c = config();
    // 2 layers × (5 + 4) values.
    assert.equal(kvBytesPerToken(c, 'f32'), 2 * 9 * 4);
    assert.equal(kvBytesPerToken(c, 'bf16'), 2 * 9 * 2);
    assert.equal(kvBytesPerToken(c, 'fp8'), 2 * 9);
    // Expanded heads would be 2 layers × 2 heads × (k 10 + v 6) values: 256 bytes in f32.
    const expanded = { ...c, mla: undefined, numKvHeads: 2, headDim: 10 };
    assert.equal(kvBytesPerToken(expanded, 'f32'), 2 * 2 * (10 + 10) * 4); // (svc's GQA layout: v at headDim too)
    // DeepSeek-V2 (60 layers, 128 heads, rank 512 + rope 64): 69120 bf16 bytes per token against 4.9 MB expanded.
    const full = configFromHf({ model_type: 'deepseek_v2', num_hidden_layers: 60, num_attention_heads: 128 });
    assert.equal(kvBytesPerToken(full, 'bf16'), 60 * 576 * 2);
    assert.equal(60 * 128 * (192 + 128) * 2, 4_915_200);
  });

  it('allocateKvCache: one latent head per layer, no V side; copy-on-write and per-block bytes see only the latent', () => {
    const c = config();
    const kv = allocateKvCache(c, 6, 4, 'f32');
    assert.equal(kv.length, 2);
    for (const layer of kv) {
      assert.equal(layer.numKvHeads, 1);
      assert.equal(layer.headDim, 9);
      assert.equal(layer.k.byteLength, 6 * 4 * 9 * 4);
      assert.equal(layer.v.byteLength, 0);
    }
    assert.equal(kvBytesPerBlock(kv), 4 * kvBytesPerToken(c, 'f32'));
    kv[0].k.fill(7, 0, 4 * 9 * 4);
    copyKvBlock(kv, 0, 5);
    assert.deepEqual(kv[0].k.subarray(5 * 144, 6 * 144), kv[0].k.subarray(0, 144));
    assert.throws(() => kvBytesPerToken(c, 'turbo4'), /not supported for deepseek_v2's latent/);
    assert.throws(() => allocateKvCache(c, 6, 4, 'turbo3'), RangeError);
  });
});

describe('DeepSeek routing (routeDeepseek)', () => {
  const logits = Float32Array.from([
    // row 0: groups of 2: {0.1, 3}, {2.9, 2.8}, {1, 0}, {2, 2.5}
    0.1, 3, 2.9, 2.8, 1, 0, 2, 2.5,
  ]);
  const probs = (() => {
    const e = Array.from(logits, (v) => Math.exp(v));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / sum);
  })();

  it('greedy: the top k by probability, times the routed scale; norm_topk_prob renormalises instead', () => {
    const ids = new Int32Array(3),
      w = new Float32Array(3);
    routeDeepseek(logits, 1, 8, 3, false, { scale: 1.5 }, ids, w);
    assert.deepEqual([...ids], [1, 2, 3]);
    [1, 2, 3].forEach((e, j) => assert.ok(Math.abs(w[j] - 1.5 * probs[e]) < 1e-7));
    routeDeepseek(logits, 1, 8, 3, true, { scale: 1.5 }, ids, w);
    const sum = probs[1] + probs[2] + probs[3];
    [1, 2, 3].forEach((e, j) => assert.ok(Math.abs(w[j] - probs[e] / sum) < 1e-7));
  });

  it('group-limited greedy: only the topk_group groups with the largest best expert compete', () => {
    const ids = new Int32Array(3),
      w = new Float32Array(3);
    // Group bests: 3, 2.9, 1, 2.5 → groups 0 and 1; picks 1, 2, 3 (not 7 of group 3).
    routeDeepseek(logits, 1, 8, 3, false, { scale: 1, groups: { numGroups: 4, topkGroups: 2 } }, ids, w);
    assert.deepEqual([...ids], [1, 2, 3]);
    // One group: group 0 only → experts 1 then 0.
    const two = new Int32Array(2),
      w2 = new Float32Array(2);
    routeDeepseek(logits, 1, 8, 2, false, { scale: 1, groups: { numGroups: 4, topkGroups: 1 } }, two, w2);
    assert.deepEqual([...two], [1, 0]);
    assert.ok(Math.abs(w2[1] - probs[0]) < 1e-7);
    // Groups 0 and 3 when group 1's best drops below group 3's.
    const l2 = logits.slice();
    l2[2] = 2.4;
    l2[3] = 2.4;
    routeDeepseek(l2, 1, 8, 3, false, { scale: 1, groups: { numGroups: 4, topkGroups: 2 } }, ids, w);
    assert.deepEqual([...ids], [1, 7, 6]);
    assert.throws(() => routeDeepseek(logits, 1, 8, 3, false, { scale: 1, groups: { numGroups: 4, topkGroups: 1 } }, ids, w));
  });
});

// ---- the MLA ops, native against the reference on every path ----

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);
const measured = new Map<string, number>();

/** A latent layer of `rank + rope` per token with each sequence's blocks interleaved and reversed, filled with random rows. */
function latentCache(ops: Ops, dtype: KvDType, rank: number, rope: number, kvLens: number[], blockSize: number, seed: number) {
  const perSeq = Math.max(...kvLens.map((l) => Math.ceil(l / blockSize)));
  const base = configFromHf(configJson('deepseek_v2'));
  const config: ModelConfig = {
    ...base,
    numLayers: 1,
    mla: { ...(base.mla as NonNullable<ModelConfig['mla']>), kvLoraRank: rank, qkRopeHeadDim: rope },
  };
  const [layer] = allocateKvCache(config, perSeq * kvLens.length, blockSize, dtype);
  if (dtype === 'fp8' || dtype === 'nvfp4') layer.kScale = 0.05;
  const tables = kvLens.map((_, s) => Int32Array.from({ length: perSeq }, (_, b) => (perSeq - 1 - b) * kvLens.length + s));
  const rand = rng(seed);
  kvLens.forEach((len, s) => {
    const slots = Int32Array.from({ length: len }, (_, t) => tables[s][Math.floor(t / blockSize)] * blockSize + (t % blockSize));
    ops.storeLatentKv(layer, randomF32(rand, len * (rank + rope), 2), len, slots);
  });
  return { layer, tables };
}

for (const path of PATHS) {
  describe(`MLA ops on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => {
      setCpuPath(info.bestCpuPath);
      console.log(
        `# ${path}: worst native vs reference mlaAttention error (relative to max |out|) ${[...measured].map(([k, e]) => `${k} ${e.toExponential(2)}`).join(', ')}`,
      );
      measured.clear();
    });

    it('storeLatentKv writes the reference bytes (f32, bf16, fp8, nvfp4)', () => {
      for (const dtype of ['f32', 'bf16', 'fp8', 'nvfp4'] as KvDType[]) {
        const a = latentCache(referenceOps, dtype, 40, 8, [21, 7], 4, 3);
        const b = latentCache(nativeOps, dtype, 40, 8, [21, 7], 4, 3);
        assert.deepEqual(b.layer.k, a.layer.k, dtype);
      }
    });

    it('mlaAttention matches the reference: paged non-contiguous blocks, several sequences, prefill and decode rows, each dtype', () => {
      const cases = [
        { rank: 40, rope: 8, heads: 6, kvLens: [37, 5, 20], qLens: [37, 1, 3] },
        { rank: 5, rope: 4, heads: 2, kvLens: [16, 9], qLens: [16, 1] },
        { rank: 512, rope: 64, heads: 16, kvLens: [19, 3], qLens: [1, 3] },
      ];
      for (const dtype of ['f32', 'bf16', 'fp8', 'nvfp4'] as KvDType[]) {
        for (const { rank, rope, heads, kvLens, qLens } of cases) {
          const { layer, tables } = latentCache(referenceOps, dtype, rank, rope, kvLens, 4, 7);
          const seqs: AttentionSeq[] = [];
          let rows = 0;
          kvLens.forEach((kvLen, s) => {
            seqs.push({ qStart: rows, qLen: qLens[s], kvLen, blockTable: tables[s] });
            rows += qLens[s];
          });
          const hd = rank + rope;
          const q = randomF32(rng(11), rows * heads * hd, 1);
          const params = { numHeads: heads, scale: hd ** -0.5, latentDim: rank };
          const want = new Float32Array(rows * heads * rank),
            got = new Float32Array(rows * heads * rank);
          referenceOps.mlaAttention(q, layer, seqs, params, want);
          nativeOps.mlaAttention(q, layer, seqs, params, got);
          let err = 0;
          for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i] - want[i]));
          const rel = err / maxAbs(want);
          measured.set(dtype, Math.max(measured.get(dtype) ?? 0, rel));
          assert.ok(rel < (dtype === 'f32' || dtype === 'bf16' ? 2e-5 : 5e-5), `${dtype} rank ${rank}: ${rel}`);
        }
      }
    });
  });
}

describe('MLA ops: argument checks', () => {
  it('refuse rotated dtypes, layers of several heads, bad latentDim and out overlapping q', () => {
    const f32 = latentCache(referenceOps, 'f32', 5, 4, [3], 4, 1);
    const seqs: AttentionSeq[] = [{ qStart: 0, qLen: 1, kvLen: 3, blockTable: f32.tables[0] }];
    const q = new Float32Array(2 * 9);
    const params = { numHeads: 2, scale: 0.3, latentDim: 5 };
    for (const ops of [referenceOps, nativeOps]) {
      assert.throws(() => ops.mlaAttention(q, f32.layer, seqs, { ...params, latentDim: 10 }, new Float32Array(20)));
      const turbo: KvLayer = { ...f32.layer, kDtype: 'turbo4' };
      assert.throws(() => ops.storeLatentKv(turbo, new Float32Array(9), 1, Int32Array.of(0)), /rotated/);
      assert.throws(() => ops.mlaAttention(q, { ...f32.layer, numKvHeads: 2 }, seqs, params, new Float32Array(10)), /one KV head/);
    }
    assert.throws(() => nativeOps.mlaAttention(q, f32.layer, seqs, params, q.subarray(0, 10)), /overlap/);
  });
});
