// llama.cpp GGUF files of the arch-fixture families, loaded through svc's normal path (loadCheckpoint)
// and run against the fixtures' Hugging Face float64 logits. Each GGUF is written by
// test/helpers/hf-to-gguf.ts as convert_hf_to_gguf.py writes that family (names, transformations,
// metadata); each family also shows its test fails when a transformation is left out of the file.
//
// Tolerance: as the safetensors tests (arch-gemma, arch-phi-granite, arch-mamba): max |ours − HF| /
// max |HF logit| < 1e-4 over every position of every sequence, for each sequence's prefill and the
// paged prefill → chunk → decode path (two sequences per batch), reference ops.
//
// Qwen3.5 (qwen35 / qwen35moe) runs against the ferrl fixtures' transformers f32 goldens (golden.json), as
// arch-qwen35.test.ts does and with its tolerances: max |ours − golden| ≤ 1e-4 dense, 1e-3 MoE (logits up to
// ~9), over a two-sequence prefill batch and prefill → chunk → single-token decodes; the GGUF model is also
// compared with the same checkpoint loaded from safetensors.
//
// What a GGUF cannot carry. The converters write no query_pre_attn_scalar (Gemma) and no sliding
// pattern for Gemma 3: llama.cpp derives the softmax scale from head_dim (hidden / heads for 27B) and
// takes one sliding layer pattern per family (2, 6). The tiny fixtures use other values (scalar 12 with
// head_dim 6; Gemma 3 pattern 3), so the test checks the config reads llama.cpp's rule and then sets the
// fixture's values on the loaded config before comparing — everything else comes from the file.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { hfToGguf, type GgufFamily, type GgufSkip } from '../helpers/hf-to-gguf.js';
import { PagedRun, pagedRows, prefillRows, readReferenceLogits, referenceRelError } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { createModel } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import type { Model } from '../../src/model/architectures/model.js';
import type { Checkpoint, ModelConfig } from '../../src/model/types.js';
import { yarnMscale } from '../../src/model/architectures/yarn.js';
import { configFromGguf } from '../../src/model/model-config.js';
import { dequantize } from '../../src/kernels/dtypes.js';
import { f16ToF32, f32ToF16 } from '../../src/kernels/dequant.js';

const ARCH_FIXTURES = resolve(MODELS, 'arch-fixtures');
const TOL = 1e-4;

interface Case {
  /** File stem (neural-api-<folder>/tiny_<name>.safetensors, tiny_<name>_logits.json). */
  name: string;
  /** Fixture folder suffix and config stem when not the name's (the MXFP4 GPT-OSS checkpoint beside the f32 one). */
  folder?: string;
  family: GgufFamily;
  /** ModelConfig.architecture the file should load as. */
  architecture: string;
  /** What llama.cpp's rules give for this file (checked), then the fixture's values the file cannot carry. */
  cannotCarry?: { expected: Partial<ModelConfig>; fixture: Partial<ModelConfig> };
  /** The same where the values are computed: checks the loaded config (when `check`) and returns the fixture's values. */
  carry?: (config: ModelConfig, check: boolean) => Partial<ModelConfig>;
  /** Transformations whose omission must break the match (refused: the loader refuses the file instead, with that message). */
  skips: (GgufSkip | { skip: GgufSkip; refused: RegExp })[];
  /** Other forms of the file the converter has written (older versions), which must match too. */
  alsoMatches?: GgufSkip[];
  /** Pair and chunking for the paged path (LongRoPE fixtures cross the threshold in the first chunk). */
  paged?: { chunks: [number, number] };
}

const CASES: Case[] = [
  {
    name: 'gemma2',
    family: 'gemma2',
    architecture: 'gemma2',
    cannotCarry: { expected: { queryPreAttnScalar: 6 }, fixture: { queryPreAttnScalar: 12 } },
    skips: ['gemma-norm-shift', 'llama-qk-permute'],
  },
  {
    name: 'gemma3',
    family: 'gemma3',
    architecture: 'gemma3',
    cannotCarry: {
      expected: { queryPreAttnScalar: 6, layerAttention: ['sliding', 'sliding', 'sliding'] },
      fixture: { queryPreAttnScalar: 12, layerAttention: ['sliding', 'sliding', 'full'] },
    },
    skips: ['gemma-norm-shift'],
  },
  { name: 'olmo2', family: 'olmo2', architecture: 'olmo2', skips: ['llama-qk-permute'] },
  { name: 'phi3', family: 'phi3', architecture: 'phi3', skips: [{ skip: 'phi3-fused-names', refused: /missing tensor/ }] },
  { name: 'phi3_longrope', family: 'phi3', architecture: 'phi3', skips: ['phi3-rope-factors'], paged: { chunks: [9, 4] } },
  { name: 'phi3_longrope_full', family: 'phi3', architecture: 'phi3', skips: ['phi3-rope-factors'], paged: { chunks: [9, 4] } },
  { name: 'mamba2', family: 'mamba2', architecture: 'mamba2', skips: ['mamba-a-exp'] },
  {
    name: 'deepseek_v2',
    family: 'deepseek2',
    architecture: 'deepseek_v2',
    skips: [{ skip: 'deepseek-kb-transpose', refused: /not one MLA kv_b split/ }],
    alsoMatches: ['deepseek-legacy-kv-b'],
  },
  {
    name: 'deepseek_v2_yarn',
    family: 'deepseek2',
    architecture: 'deepseek_v2',
    carry: deepseekYarnCarry,
    skips: [{ skip: 'deepseek-kb-transpose', refused: /not one MLA kv_b split/ }],
  },
  {
    name: 'nemotronh',
    family: 'nemotron_h',
    architecture: 'nemotron_h',
    skips: [{ skip: 'nemotron-scalar-kv', refused: /missing tensor/ }],
  },
  // The neural-api Qwen3.5 fixtures (HF float64 logits; 8 layers, two of them attention); the ferrl goldens below too.
  { name: 'qwen3_5', family: 'qwen35', architecture: 'qwen3_5', skips: ['qwen35-norm-shift', 'qwen35-v-reorder'] },
  { name: 'qwen3_5_moe', family: 'qwen35', architecture: 'qwen3_5_moe', skips: ['qwen35-norm-shift', 'qwen35-v-reorder'] },
  {
    name: 'gpt_oss_mxfp4',
    folder: 'gpt_oss',
    family: 'gpt-oss',
    architecture: 'gpt_oss',
    carry: gptOssCarry,
    skips: ['mxfp4-nibble-order', 'gpt-oss-gate-up-order'],
  },
];

/**
 * DeepSeek-V2 YaRN: llama.cpp takes mscale = mscale_all_dim (cos / sin factor 1) and puts mscale(f, mscale_all_dim)²
 * on the softmax scale; the fixture has mscale 2 (factor mscale(4, 2) / mscale(4, 0.5)) and its references were
 * made with transformers 5's scale, without the mscale² (arch-deepseek-v2.test.ts).
 */
function deepseekYarnCarry(config: ModelConfig, check: boolean): Partial<ModelConfig> {
  const m = config.mla;
  assert.ok(m?.yarn);
  if (check) {
    assert.equal(m.yarn.attentionFactor, 1);
    assert.equal(m.yarn.truncate, true);
    assert.deepEqual([m.yarn.factor, m.yarn.originalMaxPositionEmbeddings, m.yarn.betaFast, m.yarn.betaSlow], [4, 4, 32, 1]);
    assert.ok(Math.abs(m.softmaxScale - 10 ** -0.5 * yarnMscale(4, 0.5) ** 2) < 1e-7, `softmax scale ${m.softmaxScale}`);
  }
  return { mla: { ...m, softmaxScale: 10 ** -0.5, yarn: { ...m.yarn, attentionFactor: yarnMscale(4, 2) / yarnMscale(4, 0.5) } } };
}

/** GPT-OSS: ggml floors / ceils YaRN's correction range (truncate true); the fixture says truncate false. */
function gptOssCarry(config: ModelConfig, check: boolean): Partial<ModelConfig> {
  const y = config.yarnRope;
  assert.ok(y);
  if (check) {
    assert.equal(y.truncate, true);
    assert.deepEqual(config.layerAttention, ['sliding', 'full']);
    assert.equal(config.slidingWindow, 4);
    assert.equal(config.swigluLimit, 7);
  }
  return { yarnRope: { ...y, truncate: false } };
}

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-arch-gguf-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function convert(c: Case, skip?: GgufSkip): string {
  const folder = resolve(ARCH_FIXTURES, `neural-api-${c.folder ?? c.name}`);
  const out = join(dir, `${c.name}${skip ? `-${skip}` : ''}.gguf`);
  hfToGguf({
    family: c.family,
    safetensors: resolve(folder, `tiny_${c.name}.safetensors`),
    config: JSON.parse(readFileSync(resolve(folder, `tiny_${c.folder ?? c.name}_config.json`), 'utf8')) as Record<string, unknown>,
    out,
    ...(skip ? { skip } : {}),
  });
  return out;
}

/** The GGUF checkpoint with the fixture's values for what the file cannot carry (checked against llama.cpp's rules first). */
function load(c: Case, path: string, check: boolean): Checkpoint {
  const checkpoint = loadCheckpoint(path, { fastLoad: true });
  if (c.carry) return { ...checkpoint, config: { ...checkpoint.config, ...c.carry(checkpoint.config, check) } };
  if (!c.cannotCarry) return checkpoint;
  if (check)
    for (const [key, want] of Object.entries(c.cannotCarry.expected))
      assert.deepEqual(checkpoint.config[key as keyof ModelConfig], want, key);
  return { ...checkpoint, config: { ...checkpoint.config, ...c.cannotCarry.fixture } };
}

function errors(c: Case, checkpoint: Checkpoint): { prefill: number; paged: number } {
  const ref = readReferenceLogits(resolve(ARCH_FIXTURES, `neural-api-${c.folder ?? c.name}`, `tiny_${c.name}_logits.json`));
  const model = createModel(checkpoint, referenceOps);
  const options = c.paged ? { chunks: c.paged.chunks } : {};
  return {
    prefill: referenceRelError(ref, prefillRows(model, ref)),
    paged: referenceRelError(ref, [...pagedRows(model, ref, [0, 1], options), ...pagedRows(model, ref, [2, 0], options)]),
  };
}

describe('llama.cpp GGUF files of the arch-fixture families against Hugging Face logits', () => {
  it('nemotronh_moe: a dense MLP block beside MoE blocks (pattern M*E-) cannot be written by the converter; the file is refused', () => {
    const c: Case = { name: 'nemotronh_moe', family: 'nemotron_h', architecture: 'nemotron_h', skips: [] };
    assert.throws(() => loadCheckpoint(convert(c), { fastLoad: true }), /layer 3 is a dense MLP block beside MoE blocks/);
  });
  for (const c of CASES) {
    it(`${c.name} (general.architecture ${c.family}): prefill and paged within ${TOL} relative`, () => {
      const checkpoint = load(c, convert(c), true);
      assert.equal(checkpoint.format, 'gguf');
      assert.equal(checkpoint.config.architecture, c.architecture);
      const { prefill, paged } = errors(c, checkpoint);
      console.log(`# ${c.name} GGUF: max relative logit error prefill ${prefill.toExponential(2)}, paged ${paged.toExponential(2)}`);
      assert.ok(prefill < TOL, `prefill error ${prefill}`);
      assert.ok(paged < TOL, `paged error ${paged}`);
    });
    for (const form of c.alsoMatches ?? []) {
      it(`${c.name}: the ${form} form of the file matches too`, () => {
        const { prefill } = errors(c, load(c, convert(c, form), false));
        console.log(`# ${c.name} ${form}: max relative logit error ${prefill.toExponential(2)}`);
        assert.ok(prefill < TOL, `error with ${form}: ${prefill}`);
      });
    }
    for (const entry of c.skips) {
      const { skip, refused } = typeof entry === 'string' ? { skip: entry, refused: undefined } : entry;
      it(`${c.name}: a file written ${skip === 'llama-qk-permute' ? 'with' : 'without'} ${skip} no longer matches${refused ? ' (refused)' : ''}`, () => {
        if (refused) {
          assert.throws(() => errors(c, load(c, convert(c, skip), false)), refused);
          return;
        }
        const { prefill } = errors(c, load(c, convert(c, skip), false));
        console.log(`# ${c.name} ${skip}: max relative logit error ${prefill.toExponential(2)}`);
        assert.ok(!(prefill <= 1e-3), `error with ${skip}: ${prefill}`);
      });
    }
  }
});

// ---- Qwen3.5 against the ferrl goldens ------------------------------------------------------------

interface Qwen35Golden {
  full_b2: { input_ids: number[][]; logits: number[] };
  cached_split: {
    input_ids: number[][];
    prefill_len: number;
    chunk_len: number;
    prefill_logits: number[];
    chunk_logits: number[];
    decode_logits: number[][];
  };
}

interface Qwen35Case {
  label: string;
  dir: string;
  architecture: string;
  tol: number;
  /** As Case.skips. */
  skips: (GgufSkip | { skip: GgufSkip; refused: RegExp })[];
  alsoMatches: GgufSkip[];
}

const QWEN35_CASES: Qwen35Case[] = [
  {
    label: 'qwen35 dense',
    dir: 'ferrl-tiny_qwen35',
    architecture: 'qwen3_5',
    tol: 1e-4,
    skips: ['qwen35-norm-shift', 'qwen35-v-reorder', { skip: 'qwen35-a-exp', refused: /not A = −exp\(A_log\)/ }],
    alsoMatches: ['qwen35-interval-only'],
  },
  {
    label: 'qwen35moe',
    dir: 'ferrl-tiny_qwen35_moe',
    architecture: 'qwen3_5_moe',
    tol: 1e-3,
    skips: ['qwen35-norm-shift', 'qwen35-v-reorder', { skip: 'qwen35-a-exp', refused: /not A = −exp\(A_log\)/ }],
    alsoMatches: ['fuse-gate-up-exps'],
  },
];

function convertQwen35(c: Qwen35Case, skip?: GgufSkip): string {
  const folder = resolve(ARCH_FIXTURES, c.dir);
  const shards = readdirSync(folder)
    .filter((f) => f.endsWith('.safetensors'))
    .sort()
    .map((f) => resolve(folder, f));
  const out = join(dir, `${c.dir}${skip ? `-${skip}` : ''}.gguf`);
  hfToGguf({
    family: 'qwen35',
    safetensors: shards,
    config: JSON.parse(readFileSync(resolve(folder, 'config.json'), 'utf8')) as Record<string, unknown>,
    out,
    ...(skip ? { skip } : {}),
  });
  return out;
}

/** The golden's two-sequence prefill batch, then its prefill → chunk → decodes, as logits rows in the golden's order. */
function qwen35Logits(model: Model, g: Qwen35Golden): { batch: Float32Array; split: Float32Array[] } {
  const b2 = g.full_b2.input_ids;
  const batch = new PagedRun(
    model,
    b2.map((s) => s.length),
    4,
  ).step(
    b2.map((tokens, seq) => ({ seq, tokens })),
    true,
  );
  const c = g.cached_split;
  const ids = c.input_ids[0];
  const run = new PagedRun(model, [ids.length], 4);
  const mid = c.prefill_len + c.chunk_len;
  const split = [
    run.step([{ seq: 0, tokens: ids.slice(0, c.prefill_len) }], true),
    run.step([{ seq: 0, tokens: ids.slice(c.prefill_len, mid) }], true),
    ...ids.slice(mid).map((t) => run.step([{ seq: 0, tokens: [t] }], false)),
  ];
  return { batch, split };
}

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length, 'length');
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/** Max |GGUF model − golden| over both runs, and max |GGUF model − safetensors model|. */
function qwen35Errors(c: Qwen35Case, path: string): { golden: number; safetensors: number } {
  const folder = resolve(ARCH_FIXTURES, c.dir);
  const g = (JSON.parse(readFileSync(resolve(folder, 'golden.json'), 'utf8')) as { cases: Qwen35Golden }).cases;
  const ours = qwen35Logits(createModel(loadCheckpoint(path, { fastLoad: true }), referenceOps), g);
  const base = qwen35Logits(createModel(loadCheckpoint(folder, { fastLoad: true }), referenceOps), g);
  const want = [g.cached_split.prefill_logits, g.cached_split.chunk_logits, ...g.cached_split.decode_logits];
  return {
    golden: Math.max(maxAbs(ours.batch, g.full_b2.logits), ...ours.split.map((rows, i) => maxAbs(rows, want[i]))),
    safetensors: Math.max(maxAbs(ours.batch, base.batch), ...ours.split.map((rows, i) => maxAbs(rows, base.split[i]))),
  };
}

describe('llama.cpp qwen35 / qwen35moe GGUF files against the ferrl goldens', () => {
  it('qwen35 metadata: MTP blocks (nextn_predict_layers) left out; without recurrent_layers every 4th layer attends', () => {
    const meta = {
      'general.architecture': 'qwen35',
      'qwen35.block_count': 9,
      'qwen35.nextn_predict_layers': 1,
      'qwen35.embedding_length': 16,
      'qwen35.feed_forward_length': 32,
      'qwen35.attention.head_count': 4,
      'qwen35.attention.head_count_kv': 2,
      'qwen35.attention.key_length': 32,
      'qwen35.rope.dimension_count': 8,
      'qwen35.ssm.conv_kernel': 4,
      'qwen35.ssm.state_size': 8,
      'qwen35.ssm.group_count': 2,
      'qwen35.ssm.time_step_rank': 4,
      'qwen35.ssm.inner_size': 48,
    };
    const c = configFromGguf(meta, { hasOutputWeight: false, embeddingRows: 64 });
    assert.equal(c.numLayers, 8);
    assert.deepEqual(
      c.layerTypes,
      [...Array<string>(2)].flatMap(() => ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']),
    );
    assert.deepEqual(c.linearAttention, { convKernel: 4, numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 8, valueHeadDim: 12 });
    assert.equal(c.rotaryDim, 8);
    const flags = [false, true, true, true, false, true, true, true, false];
    assert.deepEqual(
      configFromGguf({ ...meta, 'qwen35.attention.recurrent_layers': flags }, { hasOutputWeight: false, embeddingRows: 64 })
        .layerTypes?.[0],
      'full_attention',
    );
    assert.throws(
      () => configFromGguf({ ...meta, 'qwen35.ssm.inner_size': 50 }, { hasOutputWeight: false, embeddingRows: 64 }),
      /inner_size 50 is not whole heads of 4/,
    );
  });
  for (const c of QWEN35_CASES) {
    it(`${c.label}: the config reads as the safetensors checkpoint's`, () => {
      const gguf = loadCheckpoint(convertQwen35(c), { fastLoad: true });
      assert.equal(gguf.format, 'gguf');
      const hf = loadCheckpoint(resolve(ARCH_FIXTURES, c.dir), { fastLoad: true }).config;
      const keys: (keyof ModelConfig)[] = [
        'architecture',
        'numLayers',
        'layerTypes',
        'linearAttention',
        'rotaryDim',
        'headDim',
        'numHeads',
        'numKvHeads',
        'ropeTheta',
        'numExperts',
        'numExpertsPerTok',
        'moeIntermediateSize',
        'moeLayers',
        'normTopkProb',
        'sharedExpertIntermediateSize',
        'tieWordEmbeddings',
      ];
      for (const key of keys) assert.deepEqual(gguf.config[key], hf[key], key);
      assert.equal(gguf.config.architecture, c.architecture);
    });
    it(`${c.label}: prefill batch and prefill → chunk → decodes within ${c.tol} of the goldens`, () => {
      const { golden, safetensors } = qwen35Errors(c, convertQwen35(c));
      console.log(`# ${c.label} GGUF: max logit error ${golden.toExponential(2)}; against safetensors ${safetensors.toExponential(2)}`);
      assert.ok(golden <= c.tol, `error ${golden}`);
      assert.ok(safetensors <= 1e-5, `against safetensors ${safetensors}`);
    });
    it(`${c.label}: an F16 file: the DeltaNet's V-head rows move as F16 rows (exact), out_proj's columns through f32`, () => {
      const gguf = loadCheckpoint(convertQwen35(c, 'f16-weights'), { fastLoad: true });
      const hf = loadCheckpoint(resolve(ARCH_FIXTURES, c.dir), { fastLoad: true });
      const p = 'model.layers.0.linear_attn.';
      for (const [name, dtype] of [
        ['in_proj_qkv.weight', 'f16'],
        ['in_proj_z.weight', 'f16'],
        ['in_proj_a.weight', 'f16'],
        ['out_proj.weight', 'f32'],
      ] as const) {
        const ours = gguf.tensors.get(p + name);
        const want = hf.tensors.get(p + name);
        assert.ok(ours && want, name);
        assert.equal(ours.dtype, dtype, name);
        assert.deepEqual(ours.shape, want.shape, name);
        const rows = want.shape[0];
        const cols = want.shape[1];
        const rounded = dequantize(want.dtype, want.data, rows, cols).map((v) => f16ToF32(f32ToF16(v)));
        assert.deepEqual(dequantize(ours.dtype, ours.data, rows, cols), rounded, name);
      }
    });
    for (const form of c.alsoMatches) {
      it(`${c.label}: the ${form} form of the file matches too`, () => {
        const { golden } = qwen35Errors(c, convertQwen35(c, form));
        console.log(`# ${c.label} ${form}: max logit error ${golden.toExponential(2)}`);
        assert.ok(golden <= c.tol, `error with ${form}: ${golden}`);
      });
    }
    for (const entry of c.skips) {
      const { skip, refused } = typeof entry === 'string' ? { skip: entry, refused: undefined } : entry;
      it(`${c.label}: a file written without ${skip} no longer matches${refused ? ' (refused)' : ''}`, () => {
        if (refused) {
          assert.throws(() => qwen35Errors(c, convertQwen35(c, skip)), refused);
          return;
        }
        const { golden } = qwen35Errors(c, convertQwen35(c, skip));
        console.log(`# ${c.label} ${skip}: max logit error ${golden.toExponential(2)}`);
        assert.ok(!(golden <= 1e-2), `error with ${skip}: ${golden}`);
      });
    }
  }
});
