// Qwen2-VL's language model against Hugging Face (tiny_qwen2vl: a random 2-layer Qwen2-VL text
// decoder, head_dim 8, mrope_section [1, 1, 2]; HF float64 logits for 10 tokens, 4 of them one 2×2
// image whose embeddings are given): the prompt's M-RoPE positions against HF's position_ids, and
// the logits with the image rows injected (ForwardBatch.inputEmbeddings) at those positions
// (ForwardBatch.mropePositions) through the paged cache — whole prefill, prefill then decode at the
// rope delta, token by token, and batched beside a text-only sequence — on both kernel sets.
// The fixture holds no vision tower (visual.*), so the vision encoder is not tested here.
//
// Tolerances (max |logit − HF|, logits up to 0.4; measured ~4e-8 on both, f32 rounding): 2e-7 on the
// reference ops, 5e-7 on the native ones (f32 sums in another order). They are tight on purpose: a
// wrong split of the frequencies among sections (e.g. Qwen3-VL's interleaved one) is off by ~1e-6,
// plain positions by ~1e-3.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { PagedRun, type PagedChunk } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { Ops } from '../../src/kernels/ops.js';
import { createModel, type Model } from '../../src/model/architectures/index.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { configFromHf, ModelConfigError } from '../../src/model/model-config.js';
import { mropePositions, writeMropeRows, type MropeLayout } from '../../src/model/vision/mrope-positions.js';
import type { Checkpoint } from '../../src/model/types.js';

interface Qwen2VlFixture {
  token_ids: number[];
  image_token_id: number;
  merged_h: number;
  merged_w: number;
  image_embeds: number[][];
  position_ids: number[][];
  logits: number[][];
}

const ref = JSON.parse(readFileSync(resolve(FIXTURES, 'tiny_qwen2vl_logits.json'), 'utf8')) as Qwen2VlFixture;
const fixtureConfig = JSON.parse(readFileSync(resolve(FIXTURES, 'tiny_qwen2vl_config.json'), 'utf8')) as Record<string, unknown>;
const WEIGHTS = resolve(FIXTURES, 'tiny_qwen2vl.safetensors');
const GRID = { t: 1, h: ref.merged_h, w: ref.merged_w };
const TOLERANCE = { reference: 2e-7, native: 5e-7 };

// The fixture's config.json is a sketch (model_type qwen2, mrope_section at the top level); these are
// the two forms real Qwen2-VL checkpoints write, with its sizes.
const TEXT_FIELDS = [
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'vocab_size',
  'max_position_embeddings',
  'rms_norm_eps',
  'tie_word_embeddings',
];
const text = Object.fromEntries(TEXT_FIELDS.map((k) => [k, fixtureConfig[k]]));
const VISION = { depth: 32, embed_dim: 1280, hidden_size: 1536, patch_size: 14, spatial_merge_size: 2, temporal_patch_size: 2 };
/** transformers 4.x: the text fields at the top level, rope_scaling {type: mrope}. */
const CLASSIC_CONFIG = {
  architectures: ['Qwen2VLForConditionalGeneration'],
  model_type: 'qwen2_vl',
  ...text,
  rope_theta: fixtureConfig.rope_theta,
  rope_scaling: { type: 'mrope', mrope_section: fixtureConfig.mrope_section },
  image_token_id: ref.image_token_id,
  vision_config: VISION,
};
/** transformers 5: the decoder's fields under text_config, rope_parameters holding theta and the sections. */
const V5_CONFIG = {
  architectures: ['Qwen2VLForConditionalGeneration'],
  model_type: 'qwen2_vl',
  image_token_id: ref.image_token_id,
  tie_word_embeddings: false,
  text_config: {
    model_type: 'qwen2_vl_text',
    architectures: null,
    bos_token_id: null,
    ...text,
    rope_parameters: { rope_type: 'default', rope_theta: fixtureConfig.rope_theta, mrope_section: fixtureConfig.mrope_section },
  },
  vision_config: VISION,
};

function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'svc-qwen2vl-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function loadWith(config: object, weights = WEIGHTS): Checkpoint {
  return withTempDir((dir) => {
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify(config));
    return loadSafetensorsCheckpoint({ files: [weights], configPath, fastLoad: false });
  });
}

/** The fixture's weights under transformers 5's names: the decoder as model.language_model.*. */
function v5Weights(dir: string): string {
  const bytes = readFileSync(WEIGHTS);
  const headerLen = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const renamed = Object.fromEntries(
    Object.entries(header).map(([name, entry]) => [name.replace(/^model\./, 'model.language_model.'), entry]),
  );
  const text = JSON.stringify(renamed);
  // Padded to 8 bytes so the f32 data after it stays aligned.
  const json = Buffer.from(text.padEnd(Math.ceil(text.length / 8) * 8, ' '));
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  const path = join(dir, 'model.safetensors');
  writeFileSync(path, Buffer.concat([size, json, bytes.subarray(8 + headerLen)]));
  return path;
}

const layout = (): MropeLayout => mropePositions(ref.token_ids, ref.image_token_id, [GRID]);
const embeddingOf = (i: number): Float32Array | undefined => {
  const image = ref.token_ids.slice(0, i + 1).filter((t) => t === ref.image_token_id).length - 1;
  return ref.token_ids[i] === ref.image_token_id ? Float32Array.from(ref.image_embeds[image]) : undefined;
};

/** tokens [from, to) of the fixture's prompt as one chunk of sequence `seq`, image rows carrying their embeddings. */
function chunk(seq: number, from: number, to: number): PagedChunk {
  const idx = Array.from({ length: to - from }, (_, j) => from + j);
  return { seq, tokens: idx.map((i) => ref.token_ids[i]), embeddings: idx.map(embeddingOf) };
}

function maxError(logits: Float32Array, firstRow: number, rows: number): number {
  const vocab = ref.logits[0].length;
  let max = 0;
  for (let r = 0; r < rows; r++) {
    for (let v = 0; v < vocab; v++) max = Math.max(max, Math.abs(logits[r * vocab + v] - ref.logits[firstRow + r][v]));
  }
  return max;
}

/** Max |logit − HF| over every row: prefill of `split` tokens, then the rest in steps of `step` tokens. */
function splitRunError(model: Model, split: number, step: number): number {
  const n = ref.token_ids.length;
  const run = new PagedRun(model, [n], 4);
  run.mrope = [layout()];
  let err = maxError(run.step([chunk(0, 0, split)], true), 0, split);
  for (let at = split; at < n; at += step) {
    const to = Math.min(n, at + step);
    err = Math.max(err, maxError(run.step([chunk(0, at, to)], true), at, to - at));
  }
  return err;
}

// ---- positions --------------------------------------------------------------------------------

test('M-RoPE positions of the prompt equal HF get_rope_index: text counts up, the image on its grid, then max + 1', () => {
  const l = layout();
  const n = ref.token_ids.length;
  assert.equal(l.length, n);
  for (let s = 0; s < 3; s++) assert.deepEqual([...l.positions.subarray(s * n, (s + 1) * n)], ref.position_ids[s], `row ${s}`);
  // The 2×2 image advances the positions by 2 but takes 4 tokens: the sequence runs 2 behind.
  assert.equal(l.ropeDelta, Math.max(...ref.position_ids.flat()) + 1 - n);
  assert.equal(l.ropeDelta, -2);
});

test('M-RoPE positions: several images, a video-like grid, decode rows, and mismatched grids', () => {
  const I = 9;
  // text, a 1×2×3 image, text, a 2×2×2 grid back to back with a 1×1×1 image, text.
  const tokens = [1, 2, I, I, I, I, I, I, 3, ...Array<number>(8).fill(I), I, 4];
  const l = mropePositions(tokens, I, [
    { t: 1, h: 2, w: 3 },
    { t: 2, h: 2, w: 2 },
    { t: 1, h: 1, w: 1 },
  ]);
  const n = tokens.length;
  const rows = [0, 1, 2].map((s) => [...l.positions.subarray(s * n, (s + 1) * n)]);
  assert.deepEqual(rows[0], [0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 9]);
  assert.deepEqual(rows[1], [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 6, 7, 7, 6, 6, 7, 7, 8, 9]);
  assert.deepEqual(rows[2], [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 8, 9]);
  assert.equal(l.ropeDelta, 10 - n);
  // A batch of [3, 4]: the last prompt token and two decoded ones of this sequence, then a text-only token.
  const out = new Int32Array(12);
  writeMropeRows(l, n - 1, 3, out, 0, 4);
  writeMropeRows(null, 7, 1, out, 3, 4);
  assert.deepEqual([...out], [9, 10, 11, 7, 9, 10, 11, 7, 9, 10, 11, 7]);
  assert.throws(() => writeMropeRows(l, 0, 3, out, 2, 4), RangeError);
  // Text only: positions are the indices, delta 0.
  const plain = mropePositions([5, 6, 7], I, []);
  assert.deepEqual([...plain.positions], [0, 1, 2, 0, 1, 2, 0, 1, 2]);
  assert.equal(plain.ropeDelta, 0);
  assert.throws(() => mropePositions([1, I, I, I], I, [GRID]), /needs 4 image tokens/);
  assert.throws(() => mropePositions([1, I, I, I, I], I, []), /only 0 image grids/);
  assert.throws(() => mropePositions([1, 2], I, [GRID]), /1 image grids but 0 images/);
});

// ---- config ------------------------------------------------------------------------------------

test('qwen2_vl configs: transformers 4 (rope_scaling) and 5 (text_config, rope_parameters) read alike', () => {
  const classic = configFromHf(CLASSIC_CONFIG);
  const v5 = configFromHf(V5_CONFIG);
  assert.equal(classic.architecture, 'qwen2_vl');
  assert.deepEqual(classic.mropeSection, [1, 1, 2]);
  assert.equal(classic.headDim, 8);
  assert.equal(classic.attentionBias, true);
  // Each keeps its own config.json for the vision encoder (vision-qwen2vl-tower.test.ts); the rest reads alike.
  assert.equal(classic.visionHfConfig, CLASSIC_CONFIG);
  assert.equal(v5.visionHfConfig, V5_CONFIG);
  assert.deepEqual({ ...v5, visionHfConfig: undefined }, { ...classic, visionHfConfig: undefined });
  // A text-only config has no sections; sections that do not split head_dim / 2 are refused.
  assert.equal(configFromHf({ ...CLASSIC_CONFIG, rope_scaling: null }).mropeSection, undefined);
  assert.throws(() => configFromHf({ ...CLASSIC_CONFIG, rope_scaling: { type: 'mrope', mrope_section: [1, 1, 1] } }), ModelConfigError);
  assert.throws(() => createModel(loadWith({ ...CLASSIC_CONFIG, rope_scaling: null }), referenceOps), /no mrope_section/);
});

// ---- logits ------------------------------------------------------------------------------------

for (const ops of [referenceOps, nativeOps] as Ops[]) {
  const tol = ops === referenceOps ? TOLERANCE.reference : TOLERANCE.native;
  const model = createModel(loadWith(CLASSIC_CONFIG), ops);

  test(`qwen2_vl on ${ops.name} ops: image embeddings at M-RoPE positions match HF logits within ${tol} (prefill, split, decode)`, () => {
    assert.equal(model.config.architecture, 'qwen2_vl');
    const n = ref.token_ids.length;
    const prefill = splitRunError(model, n, n);
    // The prompt up to and with the image, then the text after it one token at a time at index + ropeDelta.
    const decode = splitRunError(model, 7, 1);
    // Token by token from the start: image rows one per step (chunked prefill at its finest).
    const tokenByToken = splitRunError(model, 1, 1);
    const chunked = splitRunError(model, 5, 3);
    console.log(
      `# qwen2_vl (${ops.name}): max abs logit error prefill ${prefill.toExponential(2)}, prefill 7 + decode ${decode.toExponential(2)}, ` +
        `token by token ${tokenByToken.toExponential(2)}, chunks 5+3+2 ${chunked.toExponential(2)}`,
    );
    for (const [what, err] of Object.entries({ prefill, decode, tokenByToken, chunked })) assert.ok(err < tol, `${what} error ${err}`);
  });

  test(`qwen2_vl on ${ops.name} ops: batched beside a text-only sequence, each matches its own run`, () => {
    const n = ref.token_ids.length;
    const other = [3, 1, 4, 1, 5, 9, 2, 6];
    const alone = new PagedRun(model, [other.length], 4).step([{ seq: 0, tokens: other }], true);
    const run = new PagedRun(model, [n, other.length], 4);
    run.mrope = [layout(), null];
    const vocab = model.config.vocabSize;
    const first = run.step([chunk(0, 0, 6), { seq: 1, tokens: other.slice(0, 5) }], true);
    let err = maxError(first, 0, 6);
    let textDiff = 0;
    const diff = (logits: Float32Array, row: number, pos: number) => {
      for (let v = 0; v < vocab; v++) textDiff = Math.max(textDiff, Math.abs(logits[row * vocab + v] - alone[pos * vocab + v]));
    };
    for (let j = 0; j < 5; j++) diff(first, 6 + j, j);
    // Then both decode: the image sequence past its prompt (at the rope delta), the text one on.
    for (let at = 6, t = 5; at < n; at++, t++) {
      const chunks: PagedChunk[] = [chunk(0, at, at + 1)];
      if (t < other.length) chunks.push({ seq: 1, tokens: [other[t]] });
      const logits = run.step(chunks, true);
      err = Math.max(err, maxError(logits, at, 1));
      if (t < other.length) diff(logits, 1, t);
    }
    assert.ok(err < tol, `image sequence error ${err}`);
    // The text-only rows' M-RoPE positions are their indices: plain RoPE, the same sums.
    assert.ok(textDiff < 1e-6, `text-only sequence differs from its own run by ${textDiff}`);
  });
}

test('without M-RoPE positions the image prompt no longer matches; text-only batches run exactly as Qwen2', () => {
  const model = createModel(loadWith(CLASSIC_CONFIG), referenceOps);
  const n = ref.token_ids.length;
  // The image rows at plain positions 0..9 (no mropePositions): HF's logits are missed by far more than the tolerance.
  const plain = new PagedRun(model, [n], 4).step([chunk(0, 0, n)], true);
  const err = maxError(plain, 0, n);
  console.log(`# qwen2_vl without M-RoPE: max abs logit error ${err.toExponential(2)}`);
  assert.ok(err > 20 * TOLERANCE.reference, `error ${err}`);
  // Text only: M-RoPE rows all equal to the positions, no M-RoPE at all, and the qwen2 architecture
  // on the same weights give identical logits.
  const tokens = [5, 6, 7, 8, 9, 10, 11];
  const withRows = new PagedRun(model, [tokens.length], 4);
  withRows.mrope = [null];
  const a = withRows.step([{ seq: 0, tokens }], true);
  const b = new PagedRun(model, [tokens.length], 4).step([{ seq: 0, tokens }], true);
  const qwen2 = createModel(loadWith({ ...CLASSIC_CONFIG, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' }), referenceOps);
  assert.equal(qwen2.config.architecture, 'qwen2');
  const c = new PagedRun(qwen2, [tokens.length], 4).step([{ seq: 0, tokens }], true);
  assert.deepEqual(a, b);
  assert.deepEqual(b, c);
});

test('transformers 5 checkpoints (text_config, model.language_model.* tensors) give the same logits', () => {
  const classic = createModel(loadWith(CLASSIC_CONFIG), referenceOps);
  const v5 = withTempDir((dir) => createModel(loadWith(V5_CONFIG, v5Weights(dir)), referenceOps));
  const n = ref.token_ids.length;
  const run = (model: Model) => {
    const r = new PagedRun(model, [n], 4);
    r.mrope = [layout()];
    return r.step([chunk(0, 0, n)], true);
  };
  assert.deepEqual(run(v5), run(classic));
});

test('forward refuses M-RoPE positions it cannot use and input embeddings that do not fit', () => {
  const model = createModel(loadWith(CLASSIC_CONFIG), referenceOps);
  const qwen2 = createModel(loadWith({ ...CLASSIC_CONFIG, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' }), referenceOps);
  const run = (m: Model, extra: object) => {
    const r = new PagedRun(m, [2], 4);
    const batch = {
      tokens: Int32Array.from([1, 2]),
      positions: Int32Array.from([0, 1]),
      slots: Int32Array.from([0, 1]),
      seqs: [{ qStart: 0, qLen: 2, kvLen: 2, blockTable: Int32Array.from([0]) }],
      logitRows: Int32Array.from([1]),
      ...extra,
    };
    return m.forward(batch, r.kv);
  };
  const hidden = model.config.hiddenSize;
  assert.throws(() => run(qwen2, { mropePositions: new Int32Array(6) }), /has no M-RoPE/);
  assert.throws(() => run(model, { mropePositions: new Int32Array(5) }), /5 M-RoPE positions for 2 tokens/);
  assert.throws(
    () => run(model, { inputEmbeddings: { rows: Int32Array.from([1]), values: new Float32Array(hidden - 1) } }),
    /embedding values/,
  );
  assert.throws(() => run(model, { inputEmbeddings: { rows: Int32Array.from([2]), values: new Float32Array(hidden) } }), /outside/);
  run(model, { mropePositions: new Int32Array(6), inputEmbeddings: { rows: Int32Array.from([1]), values: new Float32Array(hidden) } });
});
