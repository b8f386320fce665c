// Qwen2-VL's vision side: the processor's smart_resize against values worked out by hand from
// transformers' algorithm, the patch flattening against a literal replay of the processor's
// reshape / transpose, the tower (createVisionEncoder) against a numpy reference of transformers'
// Qwen2VisionTransformerPretrainedModel on the reference and native ops, the prompt layout against
// what the encoder outputs, and the config / tensor-name plumbing.
//
// No Hugging Face output of this tower exists on this machine (no torch, no network), so
// test/fixtures/qwen2vl-vision/make_reference.py re-does transformers' forward pass in numpy (float64,
// float16 weights; float32 where transformers is: the processor's pixels, the rotary angles) for a
// tiny random tower (embed 16, 2 heads, depth 2, patch 14, merge 2, temporal patch 2, out 24) and two
// test cards already at smart_resize's size (84×56 → 2×3 tokens, 56×112 → 4×2).
//
// Tolerance: max |ours − numpy| <= 5e-6 · max |numpy| (f32 against float64, as vision-llava.test.ts).
// Measured on this machine, max |ours − numpy| (reference ops / native ops), max |numpy| 1.33 and 1.82:
//   84×56: 1.3e-7 / 3.1e-7;  56×112: 1.9e-7 / 5.5e-7. Swapping the rotary's row and column
//   frequencies is off by 0.6, the merger's erf GELU taken as tanh by 4e-4.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT, FIXTURES } from '../helpers/paths.js';
import { rng, randomF32 } from '../helpers/random-arrays.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { Ops } from '../../src/kernels/ops.js';
import { loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { normalizedTensorName } from '../../src/model/loaders/multimodal-names.js';
import { configFromHf } from '../../src/model/model-config.js';
import { createModel } from '../../src/model/architectures/index.js';
import { createVisionEncoder, imageTokenLayout, Qwen2VlVisionEncoder } from '../../src/model/vision/index.js';
import { qwen2VlVisionConfig } from '../../src/model/vision/qwen2-vl-config.js';
import { flattenPatches, preprocessQwen2Vl, qwen2VlPreprocessing, smartResize } from '../../src/model/vision/qwen2-vl-preprocess.js';
import type { Checkpoint } from '../../src/model/types.js';

type Json = Record<string, unknown>;

const DIR = resolve(REPO_ROOT, 'test', 'fixtures', 'qwen2vl-vision');
const readJson = (path: string): Json => JSON.parse(readFileSync(path, 'utf8')) as Json;

interface ReferenceImage {
  width: number;
  height: number;
  grid_thw: [number, number, number];
  /** [row, column, value] of pixel_values. */
  pixel_samples: [number, number, number][];
  image_embeds: number[][];
}
const REF = readJson(resolve(DIR, 'reference.json')) as unknown as { image_token_id: number; images: ReferenceImage[] };
const PREPROCESSOR = readJson(resolve(DIR, 'preprocessor_config.json'));

const TOLERANCE = 5e-6;

/** The same test card make_reference.py draws (vision-llava.test.ts's formula), [height][width][3]. */
function testCard(width: number, height: number): Uint8Array {
  const a = new Uint8Array(width * height * 3);
  let i = 0;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) for (let c = 0; c < 3; c++) a[i++] = ((x * 37 + y * 91 + c * 53 + ((x * y * 7) % 23)) * 13) % 256;
  return a;
}
const card = (width: number, height: number) => ({ width, height, rgb: testCard(width, height) });

function loadFixture(): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(DIR, 'model.safetensors')],
    configPath: resolve(DIR, 'config.json'),
    source: DIR,
    fastLoad: true,
  });
}

function maxError(ours: ArrayLike<number>, ref: ArrayLike<number>): number {
  assert.equal(ours.length, ref.length, 'length');
  let m = 0;
  for (let i = 0; i < ours.length; i++) m = Math.max(m, Math.abs(ours[i] - ref[i]));
  return m;
}

// ---- smart_resize ------------------------------------------------------------------------------

describe('Qwen2-VL smart_resize', () => {
  // (height, width) → (height, width); factor 28, transformers' defaults min 56·56 = 3136, max 28·28·1280 = 1003520.
  const DEFAULT = { min: 3136, max: 1003520 };
  const cases: { h: number; w: number; min?: number; max?: number; want: [number, number]; why: string }[] = [
    { h: 56, w: 84, want: [56, 84], why: 'whole merge windows stay' },
    { h: 480, w: 640, want: [476, 644], why: '480/28 = 17.14 → 17·28, 640/28 = 22.86 → 23·28' },
    // Python's round() takes halves to the even neighbour: 1.5 → 2, 2.5 → 2, 3.5 → 4, 4.5 → 4.
    { h: 70, w: 98, want: [56, 112], why: '2.5 → 2, 3.5 → 4' },
    { h: 42, w: 126, want: [56, 112], why: '1.5 → 2, 4.5 → 4' },
    // Too small: 28 × 28 = 784 < 3136, β = √(3136 / 600) = 2.2862; ⌈30β/28⌉ = ⌈2.449⌉ = 3, ⌈20β/28⌉ = ⌈1.633⌉ = 2.
    { h: 30, w: 20, want: [84, 56], why: 'scaled up to min_pixels' },
    // 10·√(3136/100) / 28 is exactly 2.0, so ⌈·⌉ = 2 on both sides.
    { h: 10, w: 10, want: [56, 56], why: 'a tiny image is scaled up' },
    // Too big: 107·28 × 143·28 = 2996 × 4004 > 1003520; β = √(12e6 / 1003520) = 3.45802;
    // ⌊3000/β/28⌋ = ⌊30.98⌋ = 30, ⌊4000/β/28⌋ = ⌊41.31⌋ = 41.
    { h: 3000, w: 4000, want: [840, 1148], why: 'scaled down to max_pixels' },
    // 1080p: 39·28 × 69·28 > max; β = √(2073600 / 1003520) = 1.43747; ⌊26.83⌋ = 26, ⌊47.70⌋ = 47.
    { h: 1080, w: 1920, want: [728, 1316], why: '1080p' },
    // Qwen2-VL's published preprocessor_config.json allows 12845056: 2996 × 4004 fits.
    { h: 3000, w: 4000, max: 12845056, want: [2996, 4004], why: "Qwen2-VL's max_pixels" },
    // A long thin image scaled down: β = √(28000 / 3136) = 2.98807; ⌊1000/β/28⌋ = ⌊11.95⌋ = 11, and the
    // 28-pixel side floors to 0, kept at one factor.
    { h: 1000, w: 28, min: 784, max: 3136, want: [308, 28], why: 'a side never falls below the factor' },
  ];
  for (const c of cases) {
    it(`${c.h}×${c.w} (h×w) → ${c.want.join('×')}: ${c.why}`, () => {
      const got = smartResize(c.h, c.w, 28, c.min ?? DEFAULT.min, c.max ?? DEFAULT.max);
      assert.deepEqual([got.height, got.width], c.want);
    });
  }
  it('refuses an aspect ratio beyond 200, as transformers', () => {
    assert.throws(() => smartResize(10, 2010, 28, 3136, 1003520), /aspect ratio/);
    assert.deepEqual(smartResize(10, 2000, 28, 3136, 1003520).width % 28, 0);
  });
});

// ---- patch flattening --------------------------------------------------------------------------

/** numpy's a.reshape(shape).transpose(perm) of a row-major array, element by element. */
function transposed(data: Float32Array, shape: readonly number[], perm: readonly number[]): Float32Array {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const outShape = perm.map((p) => shape[p]);
  const out = new Float32Array(data.length);
  const index = new Array<number>(outShape.length).fill(0);
  for (let o = 0; o < out.length; o++) {
    let src = 0;
    for (let d = 0; d < perm.length; d++) src += index[d] * strides[perm[d]];
    out[o] = data[src];
    for (let d = outShape.length - 1; d >= 0; d--) {
      if (++index[d] < outShape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

describe('Qwen2-VL patch flattening', () => {
  it("is the processor's reshape [t, tp, C, h/m, m, p, w/m, m, p] → transpose (0, 3, 6, 4, 7, 2, 1, 5, 8), the image repeated tp times", () => {
    for (const [C, H, W, p, m, tp] of [
      [3, 56, 84, 14, 2, 2],
      [3, 12, 18, 3, 2, 3],
      [2, 8, 12, 2, 2, 1],
    ]) {
      const pixels = randomF32(rng(H * W + tp), C * H * W);
      const frames = new Float32Array(tp * pixels.length);
      for (let t = 0; t < tp; t++) frames.set(pixels, t * pixels.length);
      const want = transposed(frames, [1, tp, C, H / p / m, m, p, W / p / m, m, p], [0, 3, 6, 4, 7, 2, 1, 5, 8]);
      const got = flattenPatches(pixels, C, H, W, p, m, tp);
      assert.deepEqual([got.gridH, got.gridW], [H / p, W / p]);
      assert.equal(got.patches.length, (H / p) * (W / p) * C * tp * p * p);
      assert.deepEqual(got.patches, want, `${C}×${H}×${W}, patch ${p}, merge ${m}, tp ${tp}`);
    }
  });

  it("gives the numpy reference's pixel_values for the test cards (rescale, normalise, flatten)", () => {
    const p = qwen2VlPreprocessing(PREPROCESSOR);
    for (const im of REF.images) {
      const got = preprocessQwen2Vl(card(im.width, im.height), p);
      assert.deepEqual([1, got.gridH, got.gridW], im.grid_thw);
      const cols = got.patches.length / (got.gridH * got.gridW);
      for (const [r, c, v] of im.pixel_samples) assert.equal(got.patches[r * cols + c], Math.fround(v), `pixel_values[${r}, ${c}]`);
    }
  });

  it('refuses a size that is not whole merge windows', () => {
    assert.throws(() => flattenPatches(new Float32Array(3 * 28 * 42), 3, 28, 42, 14, 2, 2), /merge windows/);
  });
});

// ---- the tower against the numpy reference ------------------------------------------------------

for (const ops of [referenceOps, nativeOps] as Ops[]) {
  describe(`Qwen2-VL vision encoder on the ${ops.name} ops`, () => {
    it("gives the numpy reference's image embeddings, rows in transformers' order, on the merged grid", () => {
      const encoder = createVisionEncoder(loadFixture(), ops);
      assert.ok(encoder instanceof Qwen2VlVisionEncoder);
      assert.equal(encoder.imageTokenId, REF.image_token_id);
      for (const im of REF.images) {
        const out = encoder.encode(card(im.width, im.height));
        const [, gh, gw] = im.grid_thw;
        assert.deepEqual(out.grid, { t: 1, h: gh / 2, w: gw / 2 });
        assert.equal(out.numTokens, im.image_embeds.length);
        const ref = im.image_embeds.flat();
        const scale = Math.max(...ref.map(Math.abs));
        const err = maxError(out.embeddings, ref);
        assert.ok(err <= TOLERANCE * scale, `${im.width}×${im.height}: max error ${err} exceeds ${TOLERANCE} · ${scale}`);
      }
    });
  });
}

// ---- prompt layout -----------------------------------------------------------------------------

describe('Qwen2-VL prompt layout', () => {
  it("equals the encoder's output (numTokens, merged grid) for images of several sizes, resized or not", () => {
    const ckpt = loadFixture();
    const encoder = createVisionEncoder(ckpt, referenceOps)!;
    const layout = imageTokenLayout(ckpt.config, PREPROCESSOR, DIR)!;
    assert.equal(layout.imageTokenId, REF.image_token_id);
    for (const [w, h] of [
      [84, 56],
      [56, 112],
      [100, 61],
      [20, 30],
      [10, 10],
      [150, 97],
    ]) {
      const out = encoder.encode(card(w, h));
      const promised = layout.tokensFor(w, h);
      assert.deepEqual(promised, { numTokens: out.numTokens, grid: out.grid }, `${w}×${h}`);
      assert.deepEqual(encoder.layout.tokensFor(w, h), promised);
      assert.equal(out.embeddings.length, out.numTokens * ckpt.config.hiddenSize);
      assert.equal(out.numTokens, out.grid!.t * out.grid!.h * out.grid!.w);
    }
  });

  it("counts a real Qwen2-VL checkpoint's tokens from its config files alone", () => {
    // Qwen/Qwen2-VL-2B-Instruct's vision_config (as published: in_chans, which transformers ignores)
    // and preprocessor_config.json; no weights are needed.
    const raw = {
      architectures: ['Qwen2VLForConditionalGeneration'],
      model_type: 'qwen2_vl',
      hidden_size: 1536,
      intermediate_size: 8960,
      num_hidden_layers: 28,
      num_attention_heads: 12,
      num_key_value_heads: 2,
      vocab_size: 151936,
      rope_theta: 1000000.0,
      rope_scaling: { type: 'mrope', mrope_section: [16, 24, 24] },
      image_token_id: 151655,
      vision_config: {
        depth: 32,
        embed_dim: 1280,
        mlp_ratio: 4,
        num_heads: 16,
        in_chans: 3,
        hidden_size: 1536,
        patch_size: 14,
        spatial_merge_size: 2,
        spatial_patch_size: 14,
        temporal_patch_size: 2,
      },
    };
    const config = configFromHf(raw);
    assert.equal(config.visionHfConfig, raw);
    const layout = imageTokenLayout(config, PREPROCESSOR, 'Qwen2-VL-2B')!;
    assert.equal(layout.imageTokenId, 151655);
    // 1920×1080 under max_pixels 12845056: smart_resize keeps 1092 × 1932 (39 · 28, 69 · 28), 78 × 138
    // patches, 39 × 69 tokens.
    assert.deepEqual(layout.tokensFor(1920, 1080), { numTokens: 39 * 69, grid: { t: 1, h: 39, w: 69 } });
    assert.deepEqual(layout.tokensFor(640, 480), { numTokens: 17 * 23, grid: { t: 1, h: 17, w: 23 } });
    // With transformers' default max_pixels (28·28·1280) 1080p shrinks to 728 × 1316: 26 × 47 tokens.
    const small = imageTokenLayout(config, { ...PREPROCESSOR, max_pixels: 28 * 28 * 1280 }, 'Qwen2-VL-2B')!;
    assert.deepEqual(small.tokensFor(1920, 1080), { numTokens: 26 * 47, grid: { t: 1, h: 26, w: 47 } });
    // No preprocessor_config.json: Qwen2VLImageProcessor's defaults, the same 1280-window cap.
    assert.deepEqual(imageTokenLayout(config, null, 'Qwen2-VL-2B')!.tokensFor(1920, 1080), small.tokensFor(1920, 1080));
  });
});

// ---- config and tensor names -------------------------------------------------------------------

describe('Qwen2-VL vision config and tensor names', () => {
  it("reads vision_config with Qwen2VLVisionConfig's defaults; the image token defaults to <|image_pad|>", () => {
    const v = qwen2VlVisionConfig({ vision_config: { hidden_size: 1536, mlp_ratio: 4 } });
    assert.deepEqual(v, {
      depth: 32,
      embedDim: 1280,
      numHeads: 16,
      mlpDim: 5120,
      hiddenAct: 'quick',
      inChannels: 3,
      patchSize: 14,
      spatialMergeSize: 2,
      temporalPatchSize: 2,
      outDim: 1536,
      imageTokenId: 151655,
    });
    assert.equal(qwen2VlVisionConfig({ vision_config: {} }).outDim, 3584);
    assert.throws(() => qwen2VlVisionConfig({ vision_config: { embed_dim: 20, num_heads: 2 } }), /multiple of 4/);
  });

  it('reads preprocessor_config.json: min_pixels / max_pixels over size {shortest_edge, longest_edge}, else the defaults', () => {
    const d = qwen2VlPreprocessing(null);
    assert.deepEqual(
      [d.minPixels, d.maxPixels, d.patchSize, d.mergeSize, d.temporalPatchSize, d.filter],
      [3136, 1003520, 14, 2, 2, 'bicubic'],
    );
    assert.deepEqual(d.normalize?.mean, [0.48145466, 0.4578275, 0.40821073]);
    const sized = qwen2VlPreprocessing({ size: { shortest_edge: 1000, longest_edge: 2000000 } });
    assert.deepEqual([sized.minPixels, sized.maxPixels], [1000, 2000000]);
    const both = qwen2VlPreprocessing({ size: { shortest_edge: 1000, longest_edge: 2000000 }, min_pixels: 3136, max_pixels: 12845056 });
    assert.deepEqual([both.minPixels, both.maxPixels], [3136, 12845056]);
  });

  it('a text-only Qwen2-VL language-model config (no vision_config) has no vision side', () => {
    const text = readJson(resolve(FIXTURES, 'tiny_qwen2vl_config.json'));
    const config = configFromHf({ ...text, architectures: ['Qwen2VLForConditionalGeneration'], model_type: 'qwen2_vl' });
    assert.equal(config.architecture, 'qwen2_vl');
    assert.equal(config.visionHfConfig, undefined);
    assert.equal(imageTokenLayout(config, null, 'tiny_qwen2vl'), null);
  });

  it('loads transformers 5 names (model.visual.*) as visual.*, and refuses a tower whose output is not the text width', () => {
    assert.equal(normalizedTensorName('model.visual.blocks.0.attn.qkv.weight'), 'visual.blocks.0.attn.qkv.weight');
    assert.equal(normalizedTensorName('model.visual.merger.mlp.2.bias'), 'visual.merger.mlp.2.bias');
    assert.equal(normalizedTensorName('visual.patch_embed.proj.weight'), 'visual.patch_embed.proj.weight');
    const ckpt = loadFixture();
    const names = [...ckpt.tensors.keys()];
    assert.ok(names.includes('visual.patch_embed.proj.weight'));
    assert.ok(names.includes('visual.merger.ln_q.bias'));
    assert.ok(!names.some((n) => n.startsWith('model.visual.')));
    // The same checkpoint's language model (model.language_model.* → model.*) loads beside it.
    assert.ok(names.includes('model.layers.0.self_attn.q_proj.bias'));
    assert.doesNotThrow(() => createModel(ckpt, referenceOps));
    const wrong = { ...ckpt, config: { ...ckpt.config, hiddenSize: 32 } };
    assert.throws(() => createVisionEncoder(wrong, referenceOps), /not the language model's hidden size/);
  });
});
