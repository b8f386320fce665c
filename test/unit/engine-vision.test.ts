// The engine runs a vision model's jobs as the model runs them by hand: a Qwen2-VL checkpoint (the
// tiny tower + language model of test/fixtures/qwen2vl-vision/) given images on the job must give
// the greedy tokens and log-probabilities of a direct run — the picture encoded, its rows at M-RoPE
// positions, later tokens at index + rope delta — with the image split across prefill chunks,
// batched beside other jobs, and read back from the prefix cache only for the same picture.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { nativeOps } from '../../src/kernels/native.js';
import { createModel } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { mropePositions } from '../../src/model/vision/mrope-positions.js';
import { createVisionEncoder, type DecodedImage } from '../../src/model/vision/index.js';
import type { EngineImage, GenerationRequest } from '../../src/engine/types.js';
import { PagedRun } from '../helpers/paged-run.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { collectJob, engineOptions, greedyJob, greedyPick, startTestEngine } from '../helpers/tiny-engine.js';

const DIR = resolve(REPO_ROOT, 'test', 'fixtures', 'qwen2vl-vision');
const checkpoint = loadCheckpoint(DIR, { fastLoad: false });
const ops = nativeOps;
const encoder = createVisionEncoder(checkpoint, ops)!;
const IMG = encoder.imageTokenId;
const NEW_TOKENS = 6;

/** A picture with some structure (gradients and a block), so different seeds differ everywhere. */
function picture(width: number, height: number, seed: number): DecodedImage {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      rgb[i] = (x * 7 + seed * 31) & 255;
      rgb[i + 1] = (y * 5 + seed * 17) & 255;
      rgb[i + 2] = x > width / 2 && y < height / 2 ? 255 - seed * 40 : seed * 60;
    }
  }
  return { width, height, rgb };
}

/** A prompt of text, the picture's image tokens, more text; and the image's place in it. */
function promptWith(image: DecodedImage, before: number[], after: number[]): { tokens: number[]; images: EngineImage[] } {
  const { numTokens, grid } = encoder.layout.tokensFor(image.width, image.height);
  const tokens = [...before, ...Array<number>(numTokens).fill(IMG), ...after];
  return { tokens, images: [{ offset: before.length, numTokens, ...(grid ? { grid } : {}), image }] };
}

/** Greedy tokens and their log-probabilities, run by hand through the paged cache. */
function directRun(prompt: { tokens: number[]; images: EngineImage[] }): { ids: number[]; logprobs: number[] } {
  const model = createModel(checkpoint, ops);
  const h = model.config.hiddenSize;
  const vocab = model.config.vocabSize;
  const run = new PagedRun(model, [prompt.tokens.length + NEW_TOKENS], 4, 'bf16'); // the engine's KV dtype (engineOptions)
  const embeddings: (Float32Array | undefined)[] = prompt.tokens.map(() => undefined);
  for (const { offset, image } of prompt.images) {
    const e = encoder.encode(image);
    for (let r = 0; r < e.numTokens; r++) embeddings[offset + r] = e.embeddings.subarray(r * h, (r + 1) * h);
  }
  run.mrope = [
    mropePositions(
      prompt.tokens,
      IMG,
      prompt.images.map((i) => i.grid!),
    ),
  ];
  let logits = run.step([{ seq: 0, tokens: prompt.tokens, embeddings }], false);
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (let k = 0; k < NEW_TOKENS; k++) {
    const { id: best, logprob } = greedyPick(logits, vocab);
    ids.push(best);
    logprobs.push(logprob);
    if (k + 1 < NEW_TOKENS) logits = run.step([{ seq: 0, tokens: [best] }], false);
  }
  return { ids, logprobs };
}

function job(prompt: { tokens: number[]; images: EngineImage[] }): GenerationRequest {
  return greedyJob(prompt.tokens, NEW_TOKENS, [], { images: prompt.images, logprobs: 1 });
}

function assertSame(
  got: { ids: number[]; logprobs: { logprob: number }[]; reason: string },
  want: ReturnType<typeof directRun>,
  what: string,
) {
  assert.equal(got.reason, 'length', what);
  assert.deepEqual(got.ids, want.ids, `${what}: tokens`);
  got.logprobs.forEach((l, i) =>
    assert.ok(Math.abs(l.logprob - want.logprobs[i]) < 1e-4, `${what}: logprob ${i} ${l.logprob} vs ${want.logprobs[i]}`),
  );
}

const wide = promptWith(picture(84, 56, 1), [1, 2, 3], [4, 5, 6, 7]);
const tall = promptWith(picture(56, 112, 2), [1, 2, 3], [4, 5, 6, 7]);
const wideOther = promptWith(picture(84, 56, 3), [1, 2, 3], [4, 5, 6, 7]);

test('the picture lies on a grid with rope delta < 0 (so the test exercises M-RoPE after the prompt)', () => {
  assert.deepEqual(wide.images[0]!.grid, { t: 1, h: 2, w: 3 });
  assert.ok(mropePositions(wide.tokens, IMG, [wide.images[0]!.grid!]).ropeDelta < 0);
  assert.notDeepEqual(directRun(wide), directRun(wideOther), 'another picture, another answer');
});

test('the engine gives the direct run’s tokens: images across prefill chunks, several jobs batched, a text-only one beside', async () => {
  const engine = await startTestEngine(engineOptions({ modelPath: DIR, maxSeqLen: 64, maxPrefillTokens: 4, blockSize: 4 }));
  const text = { tokens: [1, 2, 3, 4, 5, 6, 7], images: [] };
  const [a, b, c] = await Promise.all([wide, tall, text].map((p) => collectJob(engine.submit(job(p)))));
  assertSame(a!, directRun(wide), 'wide picture');
  assertSame(b!, directRun(tall), 'tall picture');
  assertSame(c!, directRun(text), 'text only');
});

test('prefix caching: the same picture is read from the cache, another picture after the same text is not', async () => {
  const engine = await startTestEngine(engineOptions({ modelPath: DIR, maxSeqLen: 64, blockSize: 4, enablePrefixCaching: true }));
  const cachedTokens = async (p: typeof wide) => {
    let cached = 0;
    const h = engine.submit(job(p));
    const out = { ids: [] as number[], logprobs: [] as { logprob: number }[], reason: '' };
    for await (const ev of h.events) {
      if (ev.type === 'tokens') {
        cached = ev.cachedTokens ?? cached;
        out.ids.push(...ev.ids);
        out.logprobs.push(...(ev.logprobs ?? []));
      } else out.reason = ev.reason;
    }
    return { cached, out };
  };
  const first = await cachedTokens(wide);
  const again = await cachedTokens(wide);
  const other = await cachedTokens(wideOther);
  assertSame(first.out, directRun(wide), 'first');
  assertSame(again.out, directRun(wide), 'again, from the cache');
  assertSame(other.out, directRun(wideOther), 'another picture');
  assert.equal(first.cached, 0);
  assert.ok(again.cached >= 8, `the repeated prompt is cached (${again.cached})`);
  assert.ok(other.cached <= 3, `only the text before the picture could be shared (${other.cached})`);
});

test('a job whose images do not sit on image tokens, or have the wrong count, ends with an error', async () => {
  const engine = await startTestEngine(engineOptions({ modelPath: DIR, maxSeqLen: 64, blockSize: 4 }));
  const shifted = { tokens: wide.tokens, images: [{ ...wide.images[0]!, offset: 2 }] };
  const short = { tokens: wide.tokens, images: [{ ...wide.images[0]!, numTokens: 5, grid: undefined }] };
  for (const p of [shifted, short]) {
    const out = await collectJob(engine.submit(job(p)));
    assert.equal(out.reason, 'error');
  }
  // The engine goes on serving.
  assertSame(await collectJob(engine.submit(job(wide))), directRun(wide), 'after the refusals');
});
