// LLaVA (SigLIP vision tower + projector + Qwen2 language model) and SigLIP against Hugging Face
// transformers' float64 outputs (tiny random fixtures; tools/llava_tiny_fixture.py and
// tools/siglip_tiny_fixture.py of joaopauloschuler/neural-api made them), on the reference and native ops;
// preprocessing against Pillow's own resize (bytes generated with Pillow 9.4, embedded below).
//
// Tolerances: max |ours − HF| <= 5e-6 · max |HF| (f32 against float64). Measured on this machine
// (reference ops / native ops, AVX-512), relative to max |HF|:
//   SigLIP image_embeds (tower, post-LayerNorm, attention-pooling head; max 6.3): 1.9e-7 / 2.0e-7.
//   LLaVA projector output, visual_tokens (max 56): 1.4e-7 / 2.1e-7.
//   LLaVA logits with the image rows injected (max 5.0): 6.5e-7 / 6.8e-7; the same bound holds for a
//   chunked prefill that splits the image, two sequences per batch, and decoding after the prefill.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { PagedRun } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { Ops } from '../../src/kernels/ops.js';
import { loadSafetensorsCheckpoint, parseSafetensors } from '../../src/model/loaders/index.js';
import { normalizedTensorName } from '../../src/model/loaders/multimodal-names.js';
import { configFromHf } from '../../src/model/model-config.js';
import { createModel } from '../../src/model/architectures/index.js';
import { CheckpointWeights } from '../../src/model/architectures/weights.js';
import { createVisionEncoder, LlavaVisionEncoder } from '../../src/model/vision/index.js';
import { visionTowerConfig } from '../../src/model/vision/vision-config.js';
import { VisionTransformer } from '../../src/model/vision/vision-transformer.js';
import { SiglipPoolingHead } from '../../src/model/vision/siglip-head.js';
import { llavaVisionConfig } from '../../src/model/vision/llava-config.js';
import { imagePreprocessing, preprocessImage } from '../../src/model/vision/preprocess.js';
import { pilResize, type PilFilter } from '../../src/model/vision/pil-resize.js';
import type { Checkpoint } from '../../src/model/types.js';

type Json = Record<string, unknown>;

const readJson = (name: string): Json => JSON.parse(readFileSync(resolve(FIXTURES, name), 'utf8')) as Json;
const flat = (x: unknown): number[] => (Array.isArray(x) ? x.flatMap(flat) : [x as number]);

function maxError(ours: ArrayLike<number>, ref: ArrayLike<number>): number {
  assert.equal(ours.length, ref.length, 'length');
  let m = 0;
  for (let i = 0; i < ours.length; i++) m = Math.max(m, Math.abs(ours[i] - ref[i]));
  return m;
}

/** max |ours − ref| within TOLERANCE of max |ref|. */
function assertNear(ours: ArrayLike<number>, ref: ArrayLike<number>, what: string): void {
  let scale = 0;
  for (let i = 0; i < ref.length; i++) scale = Math.max(scale, Math.abs(ref[i]));
  const err = maxError(ours, ref);
  assert.ok(err <= TOLERANCE * scale, `${what}: max error ${err} exceeds ${TOLERANCE} · ${scale}`);
}

const TOLERANCE = 5e-6;

/** A deterministic RGB test card [height][width][3] (the same formula made the Pillow references). */
function testCard(width: number, height: number): Uint8Array {
  const a = new Uint8Array(width * height * 3);
  let i = 0;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) for (let c = 0; c < 3; c++) a[i++] = ((x * 37 + y * 91 + c * 53 + ((x * y * 7) % 23)) * 13) % 256;
  return a;
}

const hexBytes = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g)!.map((b) => parseInt(b, 16)));

function loadLlava(): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(FIXTURES, 'tiny_llava.safetensors')],
    configPath: resolve(FIXTURES, 'tiny_llava_config.json'),
    fastLoad: true,
  });
}

const OPS: Ops[] = [referenceOps, nativeOps];

// ---- SigLIP ----

for (const ops of OPS) {
  describe(`SigLIP vision tower on the ${ops.name} ops`, () => {
    it("gives transformers' image_embeds (pooler output of the attention-pooling head)", () => {
      const file = resolve(FIXTURES, 'tiny_siglip.safetensors');
      const { tensors } = parseSafetensors(new Uint8Array(readFileSync(file)), file);
      const w = new CheckpointWeights({ source: file, tensors }, ops);
      const config = visionTowerConfig(readJson('tiny_siglip_config.json').vision_config as Json, file, 'siglip_vision_model');
      assert.equal(config.useHead, true);
      const tower = new VisionTransformer(config, w, 'vision_model.', ops);
      const head = new SiglipPoolingHead(config, w, 'vision_model.head.', ops);
      const ref = readJson('tiny_siglip_embeds.json');
      const pooled = head.pool(tower.lastHiddenState(Float32Array.from(flat(ref.pixels))), tower.numTokens);
      assertNear(pooled, flat(ref.image_embeds), 'image_embeds');
    });
  });
}

// ---- LLaVA ----

describe('LLaVA checkpoint loading', () => {
  it('reads the wrapper config as its Qwen2 text_config, keeps the vision side, and normalises tensor names', () => {
    const ckpt = loadLlava();
    const c = ckpt.config;
    assert.equal(c.architecture, 'llava');
    assert.equal(c.textArchitecture, 'qwen2');
    assert.deepEqual([c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.vocabSize, c.tieWordEmbeddings], [32, 2, 4, 2, 50, false]);
    assert.equal(c.attentionBias, true);
    assert.ok(c.visionHfConfig?.vision_config);
    assert.ok(ckpt.tensors.has('model.layers.0.self_attn.q_proj.bias'));
    assert.ok(ckpt.tensors.has('vision_tower.encoder.layers.1.mlp.fc2.weight'));
    assert.ok(ckpt.tensors.has('multi_modal_projector.linear_1.weight'));
    assert.ok(![...ckpt.tensors.keys()].some((n) => n.startsWith('model.language_model.') || n.startsWith('model.vision_tower.')));
    const v = llavaVisionConfig(c.visionHfConfig!);
    assert.deepEqual(v.featureLayers, [2], "vision_feature_layer -1 is the last layer's output, before post_layernorm");
    assert.equal(v.dropFirstRow, false);
    assert.equal(v.projectorAct, 'erf');
    assert.equal(v.imageTokenId, 49);
  });

  it('names classic llava-hf (transformers 4) tensors the same way', () => {
    assert.equal(normalizedTensorName('language_model.model.layers.3.mlp.up_proj.weight'), 'model.layers.3.mlp.up_proj.weight');
    assert.equal(normalizedTensorName('language_model.lm_head.weight'), 'lm_head.weight');
    assert.equal(
      normalizedTensorName('vision_tower.vision_model.encoder.layers.0.layer_norm1.bias'),
      'vision_tower.encoder.layers.0.layer_norm1.bias',
    );
    assert.equal(normalizedTensorName('model.vision_tower.vision_model.post_layernorm.weight'), 'vision_tower.post_layernorm.weight');
    assert.equal(normalizedTensorName('multi_modal_projector.linear_2.bias'), 'multi_modal_projector.linear_2.bias');
    assert.equal(normalizedTensorName('model.layers.0.self_attn.q_proj.weight'), 'model.layers.0.self_attn.q_proj.weight');
  });

  it('reads a llava-1.5-style config: Llama text_config with LlamaConfig defaults, CLIP tower, layer -2, default strategy', () => {
    // llava-hf/llava-1.5-7b-hf's config.json, as published (sizes left to the defaults).
    const raw = {
      architectures: ['LlavaForConditionalGeneration'],
      ignore_index: -100,
      image_token_index: 32000,
      model_type: 'llava',
      pad_token_id: 32001,
      projector_hidden_act: 'gelu',
      text_config: {
        _name_or_path: 'lmsys/vicuna-7b-v1.5',
        architectures: ['LlamaForCausalLM'],
        max_position_embeddings: 4096,
        model_type: 'llama',
        rms_norm_eps: 1e-5,
        torch_dtype: 'float16',
        vocab_size: 32064,
      },
      tie_word_embeddings: false,
      torch_dtype: 'float16',
      vision_config: {
        hidden_size: 1024,
        image_size: 336,
        intermediate_size: 4096,
        model_type: 'clip_vision_model',
        num_attention_heads: 16,
        num_hidden_layers: 24,
        patch_size: 14,
        projection_dim: 768,
        vocab_size: 32000,
      },
      vision_feature_layer: -2,
      vision_feature_select_strategy: 'default',
      vocab_size: 32064,
    };
    const c = configFromHf(raw);
    assert.deepEqual(
      [
        c.architecture,
        c.textArchitecture,
        c.hiddenSize,
        c.intermediateSize,
        c.numLayers,
        c.numHeads,
        c.numKvHeads,
        c.vocabSize,
        c.rmsNormEps,
      ],
      ['llava', 'llama', 4096, 11008, 32, 32, 32, 32064, 1e-5],
    );
    const v = llavaVisionConfig(c.visionHfConfig!);
    assert.deepEqual(v.featureLayers, [23]);
    assert.equal(v.dropFirstRow, true);
    assert.deepEqual([v.tower.family, v.tower.hiddenAct, v.tower.layerNormEps, v.tower.useHead], ['clip', 'quick', 1e-5, false]);
    // Its preprocessor_config.json (CLIPImageProcessor): shortest edge 336, bicubic, center crop 336.
    const p = imagePreprocessing(
      {
        crop_size: { height: 336, width: 336 },
        do_center_crop: true,
        do_convert_rgb: true,
        do_normalize: true,
        do_rescale: true,
        do_resize: true,
        image_mean: [0.48145466, 0.4578275, 0.40821073],
        image_processor_type: 'CLIPImageProcessor',
        image_std: [0.26862954, 0.26130258, 0.27577711],
        processor_class: 'LlavaProcessor',
        resample: 3,
        rescale_factor: 0.00392156862745098,
        size: { shortest_edge: 336 },
      },
      v.tower,
    );
    assert.deepEqual([p.resize, p.crop, p.filter], [{ shortestEdge: 336 }, { height: 336, width: 336 }, 'bicubic']);
  });

  it('has no vision encoder for a text-only checkpoint', () => {
    const text = loadSafetensorsCheckpoint({
      files: [resolve(FIXTURES, 'tiny_qwen2.safetensors')],
      configPath: resolve(FIXTURES, 'tiny_qwen2_config.json'),
      fastLoad: true,
    });
    assert.equal(createVisionEncoder(text, referenceOps), null);
  });
});

for (const ops of OPS) {
  describe(`LLaVA on the ${ops.name} ops`, () => {
    const ckpt = loadLlava();
    const ref = readJson('tiny_llava_logits.json');
    const ids = ref.token_ids as number[];
    const vocab = ckpt.config.vocabSize;
    const refLogits = flat(ref.logits);
    const first = ids.indexOf(49);
    const encoder = createVisionEncoder(ckpt, ops);
    assert.ok(encoder instanceof LlavaVisionEncoder);
    const image = encoder.encodePixels(Float32Array.from(flat(ref.pixels)));
    // Per token of the prompt: its image row where it is an image placeholder.
    const h = ckpt.config.hiddenSize;
    const imageRows = ids.map((_, j) =>
      j >= first && j < first + image.numTokens ? image.embeddings.subarray((j - first) * h, (j - first + 1) * h) : undefined,
    );

    it("projects the image to transformers' visual_tokens", () => {
      assert.equal(encoder.imageTokenId, 49);
      assert.equal(image.numTokens, 9);
      assert.equal(ids.filter((t) => t === encoder.imageTokenId).length, image.numTokens);
      assertNear(image.embeddings, flat(ref.visual_tokens), 'visual_tokens');
    });

    it("gives transformers' logits with the image rows injected (whole prefill, two sequences per batch)", () => {
      const model = createModel(ckpt, ops);
      const run = new PagedRun(model, [ids.length, ids.length], 4);
      const logits = run.step(
        [
          { seq: 0, tokens: ids, embeddings: imageRows },
          { seq: 1, tokens: ids, embeddings: imageRows },
        ],
        true,
      );
      assertNear(logits.subarray(0, ids.length * vocab), refLogits, 'logits');
      assertNear(logits.subarray(ids.length * vocab), refLogits, 'logits of the second sequence');
    });

    it('gives the same logits with the image split across prefill chunks, then decoding', () => {
      const model = createModel(ckpt, ops);
      const run = new PagedRun(model, [ids.length], 4);
      const split = first + 4; // the first chunk holds 4 of the 9 image rows
      const a = run.step([{ seq: 0, tokens: ids.slice(0, split), embeddings: imageRows.slice(0, split) }], true);
      const b = run.step([{ seq: 0, tokens: ids.slice(split, -2), embeddings: imageRows.slice(split, -2) }], true);
      const rows = [a, b];
      for (const t of ids.slice(-2)) rows.push(run.step([{ seq: 0, tokens: [t] }], true));
      const all = new Float32Array(ids.length * vocab);
      let at = 0;
      for (const r of rows) all.set(r, (at += r.length) - r.length);
      assertNear(all, refLogits, 'chunked prefill and decode logits');
    });

    it('leaves pixels past the last whole patch unread (image_size not a multiple of patch_size)', () => {
      // The tower's weights at image_size 14, patch 4: still a 3×3 grid, the last 2 rows and columns unused.
      const vision = ckpt.config.visionHfConfig!.vision_config as Json;
      const at12 = new VisionTransformer(visionTowerConfig(vision, 'test'), new CheckpointWeights(ckpt, ops), 'vision_tower.', ops);
      const at14 = new VisionTransformer(
        visionTowerConfig({ ...vision, image_size: 14 }, 'test'),
        new CheckpointWeights(ckpt, ops),
        'vision_tower.',
        ops,
      );
      assert.equal(at14.numTokens, 9);
      const pixels12 = Float32Array.from(flat(ref.pixels));
      const pixels14 = new Float32Array(3 * 14 * 14).fill(7);
      for (let c = 0; c < 3; c++)
        for (let y = 0; y < 12; y++) pixels14.set(pixels12.subarray((c * 12 + y) * 12, (c * 12 + y + 1) * 12), (c * 14 + y) * 14);
      assert.deepEqual(at14.hiddenStates(pixels14, [2]), at12.hiddenStates(pixels12, [2]));
    });

    it('encodes a decoded 12×12 image through the SigLIP default preprocessing', () => {
      // At the tower's size no resize happens: pixel_values are (v · (1/255) − 0.5) / 0.5, in f32 as transformers.
      const rgb = testCard(12, 12);
      const pixels = new Float32Array(3 * 144);
      for (let c = 0; c < 3; c++)
        for (let i = 0; i < 144; i++) pixels[c * 144 + i] = Math.fround(Math.fround(rgb[i * 3 + c] * (1 / 255)) - 0.5) / 0.5;
      assert.deepEqual(encoder.encode({ width: 12, height: 12, rgb }), encoder.encodePixels(pixels));
    });
  });
}

// ---- preprocessing ----

// Pillow 9.4's Image.resize of testCard(from) to `to` with `filter`, bytes in hex.
const PILLOW_RESIZES: { from: [number, number]; to: [number, number]; filter: PilFilter; hex: string }[] = [
  {
    from: [13, 7],
    to: [5, 4],
    filter: 'bicubic',
    hex: '8f913b7e3d8078997c759077b35e5a99a067738d879c945367a074818177a75c6a8e84666ba3815f65afa25b9e887f9c9a868f559e96747580926676',
  },
  {
    from: [13, 7],
    to: [20, 9],
    filter: 'bicubic',
    hex: '00b86961a859ea8e3fd57628bc6503a556068f41b3781ef26116cf4abbb934ffa21fdc8d00c4763bb05ee6a247ea8e31c67719af600495468d8536ff716114aa7526d6934465b0544a6f6a65108a6c09cd791aa58d3f3eac8a4cbdb25db3b46547d0732aad8b8442aa952db69c3d8aab5b19ca7246e07d86709447ad8a3bcc924135e47e3ea88c8f3d875f66ba6e6b74a95a00a0a34ab9af5de6842772d37341c59c87337f5b4bb45472a7ae6518ad9d2c97cc5c4df19d95ba65cf883e64cca781af91c67d4c57e99263d173bb6c1d6fc67466bc7da6523467c78958ec909a811d5eb0464ec269af69416c90741ec3a6de8f40da8b2eca7b41a455d87e21f25815bb21aa9667d271ed9b4bce76149f474b7a28d955aec329f49203bd6d7e9736d271509c4be78a3bfa8637e8962fd59d4267a95a00b36033ce6d4fc786551bb46c53ba69ffa65776b85829ce7a4bd2b1566dbb5e32c76347dc7f36c99630d39847ffa858a2b460332e8db95c6aa9a44c85df7d32cf6e51954c9072763f75ab3d8bcd806e88bc3d94b80ddf813549a97c00b3c44f84707fa84287b1955669d17940f0a12a42c04a6880af9d4cffb5ac86a38c7e8a37a9b9456c8b976e2cf0a35a89cf656bab41a0514f3a9f7429ada19d4974ca555db36090523cb65c5cca7b7fc56908b24d7d8750f839d9be82e56ff49c4eb84ede777ff645faa816ed8b4fbc5ad37b29a834a15850d91bd5928fb343d86b4c8936dd5f10dc4c00ba',
  },
  {
    from: [13, 7],
    to: [6, 7],
    filter: 'bilinear',
    hex: '849849ac5d406858bd31d086ae9142a5566aa08031504f9b9b4c4eada1606549b0be6f4f7fc3748dbe6f7ead5e7fae5f74a55664a758ca7b5b6d51b8a095577375965ba8709a4bcd97485ca6893a83b66747a3a57c2ddea354a2778baaa354856d938c446a99828164ac8c3d9272919f9e985eb9ae838074728c867f30b2',
  },
  {
    from: [13, 7],
    to: [13, 3],
    filter: 'lanczos',
    hex: '4f9c3ce0914256b7688a3b596f4bd587374d89ce7ba0a15220e382a75c6d866e7fb263079986a0928e8ac273248985a19b4c8624d577e19234769f5f7975904db3af616d78747f8aa455ac8985836b806d9344cbabac5db263818a667b61e89c478cad52b3646706c980967f7f9078924394b65670',
  },
  {
    from: [50, 37],
    to: [12, 12],
    filter: 'bicubic',
    hex: '8881637e8b7384846f6d9a89798e86648996847c977b7894916c7487777e9584756899849779796e95827d6d928d8a736f779d80817279857c7e678a8a8e657a7991957e806497798c53a0866aac8267a579687a8c688b987a818d756c7e6f5ca16f66ae7c7b9b89758a756765888f9689628e679268a1908b906c856f6a588f848e8872845f7f698396819b789a688b709778748c747f6f828a767c8274917e92748972886c908a827d9574877b7c7f77806989928563888d6c71a88a6f87928f72868d8369799c7c639383835d9e89826d94816d6f9b7a78568f718c915faa92879286a686698d7866816f9b855e97637b856792767d8f797e8d6f777d7e82787d7b87808e6b8889877f866980787a7a7e72857a8d6c7a787f7689838a648b6a95859181948b7577707b948e737c7769857c6c838f8d6f69947887767578917d8073af858d5a8a7c7690845a8f8f6398756794a0857c8a778f8264768f7f69978667917964887f788067779a6e9580697e698c7096739a846d8f7d8568947c889154758374639a926d9c627b648769788c818b6f83818b778191887485728c7f7e957d916b7189677e6c9288969574',
  },
];

describe('image preprocessing', () => {
  it('resizes exactly as Pillow does (bicubic down and up, bilinear, lanczos)', () => {
    for (const { from, to, filter, hex } of PILLOW_RESIZES) {
      const got = pilResize(testCard(from[0], from[1]), from[0], from[1], to[0], to[1], filter);
      assert.deepEqual(got, hexBytes(hex), `${filter} ${from.join('×')} → ${to.join('×')}`);
    }
  });

  it('turns a constant colour into its normalised value at any input size (SigLIP defaults)', () => {
    const tower = visionTowerConfig({ model_type: 'siglip_vision_model', image_size: 12, patch_size: 4 }, 'test');
    const p = imagePreprocessing(null, tower);
    for (const [w, h] of [
      [12, 12],
      [31, 7],
      [5, 40],
    ]) {
      const rgb = new Uint8Array(w * h * 3);
      for (let i = 0; i < w * h; i++) rgb.set([255, 128, 0], i * 3);
      const px = preprocessImage({ width: w, height: h, rgb }, p);
      assert.equal(px.length, 3 * 12 * 12);
      const want = [1, Math.fround(Math.fround(128 / 255) - 0.5) / 0.5, -1];
      for (let c = 0; c < 3; c++)
        for (let i = 0; i < 144; i++) assert.equal(px[c * 144 + i], Math.fround(want[c]), `${w}×${h} channel ${c}`);
    }
  });

  it('resizes the shortest edge and center-crops as CLIPImageProcessor (against Pillow resize + crop)', () => {
    const tower = visionTowerConfig({ model_type: 'clip_vision_model', image_size: 12, patch_size: 4 }, 'test');
    const p = imagePreprocessing(null, tower);
    const mean = [0.48145466, 0.4578275, 0.40821073];
    const std = [0.26862954, 0.26130258, 0.27577711];
    // Pillow: testCard(40, 20).resize((24, 12), BICUBIC).crop((6, 0, 18, 12)); testCard(15, 31).resize((12, 24)).crop((0, 6, 12, 18)).
    for (const [w, h, hex] of [
      [
        40,
        20,
        'b35549a1628448bbb74ca18ab0943a7b9f54786bd988488c48cd72a4a882bb5e877567b1807965809a704cc0808270976f79985db8a46a88a6638c9b389384567bae7e52baa08e719254b8ab6c92a0ab5daaa24f408ca58352959647ae7b8b76809241a494683fa1a56f828083856796577f926b555e8da6587e8781739f8f9a78598b7bba66555f926baa875f743d9c8354c57e47d37f57607e56608445c4a06fbfa7525ca7836b9e63c2956c4ca56c449a685384749d6e87776ba3889790435a8b70ae5f6069638195a668886db676af766e619c5196936f55c97b45c458e8873bc29c7fa15fbba46aa66e4ea377365431af6d9f652ac879339d8f844f95916f9a9f82726d73a66b62a475afa9817d5a7a9a635e667b9b5e58a37771445bb75864ad4a5ab69b815ad279535470a1865da7ab6162b17b6558d88d5fb0a1ab418b9e68787e9d97a0a56180716142a085a96c7b8073a4a6ad5b767e87339f9197639189709baea04d5cca9e6ed3987274a6585cca846e639c6bbfbc673e9f7b57a98e4e8f997247c78e5fb5627f909790778a74aa9a81759c49ad77b169717a79755769838b78645e83aa9a806b679677',
      ],
      [
        15,
        31,
        'b861917a1d8bd4765e6e2fbba33ed4a0a18a666ed0c37d88529dada24daf77a2755f44a16d67dd75697e827c8666b991c46e4aaa5774c979166aaf97af5e834e4ebc6da3595be49970cd6422b38d366ba5c68a5183b25689886fae523abe6f825975cb7514e38b8ba23ceb8a766099438aa97073d39a7b3639c67177af86929264a0477391816c9142abb76295a9916a2cb06d6baf68ad95418561b9613fc141c96796a045a17134773ec95348af28aa91b88345a4414b92b15847cc754adc94794d74867347ea7c5c447c7864b87d694aa37261bcac773bbf6967b1837b76aaa526c2659c672e447cc95fbc91a35b659773aa88e17cb4983481497b9c64a7ab5b14a57955bc9944d89457d9886353c2642fbd7e4ed1a24eeba86adc8b6345bd71aa65668a564f7585a9566236ba84b53c875cab7179589baa897955a9a4c5559056e09ca13a98654edf7a628f7015c15b87a488bb9f41c7b46fc76752a9c548d16d45797184b5852a6f9a7f1c91ba5c55529ea0843cbf64b4502aed92778ad298b8672094905851c8de956076714f7a6086a768744da276856a2b77987c7f2d91a27c7e707dc26e9044758a49ae8d65',
      ],
    ] as const) {
      const px = preprocessImage({ width: w, height: h, rgb: testCard(w, h) }, p);
      const bytes = hexBytes(hex);
      for (let c = 0; c < 3; c++)
        for (let i = 0; i < 144; i++) {
          const want = (bytes[i * 3 + c] / 255 - mean[c]) / std[c];
          assert.ok(Math.abs(px[c * 144 + i] - want) <= 1e-6, `${w}×${h} channel ${c} pixel ${i}: ${px[c * 144 + i]} vs ${want}`);
        }
    }
  });

  it('refuses a preprocessor whose output does not fit the tower', () => {
    const tower = visionTowerConfig({ model_type: 'siglip_vision_model', image_size: 12, patch_size: 4 }, 'test');
    assert.throws(() => imagePreprocessing({ size: { height: 16, width: 16 } }, tower), /12×12/);
    assert.throws(() => imagePreprocessing({ resample: 0 }, tower), /resample/);
  });
});
