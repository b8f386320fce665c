// A vision model's prompt on its way to the engine: each image placeholder the template wrote is
// expanded to the image's tokens (withImageTokens), the engine checks the images' places against
// its encoder (ModelRunner.checkImages), and the prefix cache keys image tokens by their pixels
// (cacheKeyTokens).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withImageTokens } from '../../src/chat/image-prompt.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import { partsMessage, type ChatImagePart, type ChatRequest } from '../../src/chat/request.js';
import { ApiError } from '../../src/common/api-error.js';
import { ModelRunner } from '../../src/engine/model-runner.js';
import { cacheKeyTokens, createSequence } from '../../src/engine/sequence.js';
import type { GenerationRequest } from '../../src/engine/types.js';
import type { Model } from '../../src/model/architectures/index.js';
import type { DecodedImage, ImageTokenLayout, VisionEncoder } from '../../src/model/vision/types.js';

const IMG = 9;
// A layout whose token count depends on the size, as Qwen2-VL's does: one token per 10×10 pixels.
const layout: ImageTokenLayout = {
  imageTokenId: IMG,
  tokensFor: (w, h) => ({ numTokens: Math.ceil(w / 10) * Math.ceil(h / 10) }),
};
const runtime = (maxSeqLen = 100) => ({ vision: { layout }, maxSeqLen }) as unknown as ModelRuntime;

function picture(width: number, height: number, value: number): DecodedImage {
  return { width, height, rgb: new Uint8Array(width * height * 3).fill(value) };
}

function chatWith(...images: DecodedImage[]): ChatRequest {
  const parts: ChatImagePart[] = images.map((image, i) => ({
    type: 'image',
    source: { kind: 'url', url: 'data:' },
    param: `p${i}`,
    image,
  }));
  return { messages: [partsMessage('user', [...parts, { type: 'text', text: 'hi' }], '\n')] } as ChatRequest;
}

test('withImageTokens: each placeholder becomes its image’s tokens, in order, with their places', () => {
  const a = picture(20, 10, 1); // 2 tokens
  const b = picture(30, 20, 2); // 6 tokens
  const out = withImageTokens(chatWith(a, b), { text: 't', tokens: [1, IMG, 2, 3, IMG, 4] }, runtime());
  assert.deepEqual(out.tokens, [1, IMG, IMG, 2, 3, IMG, IMG, IMG, IMG, IMG, IMG, 4]);
  assert.deepEqual(
    out.images!.map(({ offset, numTokens, image }) => [offset, numTokens, image]),
    [
      [1, 2, a],
      [5, 6, b],
    ],
  );
  // Without images the prompt is returned as it is.
  const plain = { text: 't', tokens: [1, 2] };
  assert.equal(withImageTokens({ messages: [{ role: 'user', content: 'hi' }] } as ChatRequest, plain, runtime()), plain);
});

test('withImageTokens: a placeholder count that does not match the images, or a prompt past the context, is a 400', () => {
  const a = picture(20, 10, 1);
  assert.throws(
    () => withImageTokens(chatWith(a), { text: 't', tokens: [IMG, 1, IMG] }, runtime()),
    (e: ApiError) => e.status === 400 && e.code === 'image_placeholder_mismatch' && e.param === 'p0',
  );
  assert.throws(
    () => withImageTokens(chatWith(a, a), { text: 't', tokens: [IMG, 1] }, runtime()),
    (e: ApiError) => e.status === 400 && e.code === 'image_placeholder_mismatch',
  );
  // An image the model's processor refuses (the layout throws a RangeError).
  const picky = {
    vision: {
      layout: {
        imageTokenId: IMG,
        tokensFor: () => {
          throw new RangeError('aspect ratio exceeds 200');
        },
      },
    },
    maxSeqLen: 100,
  } as unknown as ModelRuntime;
  assert.throws(
    () => withImageTokens(chatWith(a), { text: 't', tokens: [IMG] }, picky),
    (e: ApiError) => e.status === 400 && e.code === 'invalid_image' && e.param === 'p0' && /aspect ratio exceeds 200/.test(e.message),
  );
  // 1 + 100 image tokens in a 64-token context.
  assert.throws(
    () => withImageTokens(chatWith(picture(100, 100, 1)), { text: 't', tokens: [1, IMG] }, runtime(64)),
    (e: ApiError) => e.status === 400 && e.code === 'context_length_exceeded',
  );
});

function job(tokens: number[], images: GenerationRequest['images']): GenerationRequest {
  return {
    promptTokens: tokens,
    maxTokens: 4,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
    stopTokenIds: [],
    timeoutMs: 0,
    logprobs: 0,
    images,
  };
}

test('cacheKeyTokens: image tokens are keyed by their pixels, text tokens by their ids', () => {
  const tokens = [1, IMG, IMG, 2];
  const red = createSequence(1, job(tokens, [{ offset: 1, numTokens: 2, image: picture(20, 10, 200) }]), 0);
  const redAgain = createSequence(2, job(tokens, [{ offset: 1, numTokens: 2, image: picture(20, 10, 200) }]), 0);
  const blue = createSequence(3, job(tokens, [{ offset: 1, numTokens: 2, image: picture(20, 10, 7) }]), 0);
  const keys = cacheKeyTokens(red);
  assert.equal(keys[0], 1);
  assert.equal(keys[3], 2);
  assert.ok(keys[1] < 0 && keys[1] === keys[2]);
  assert.deepEqual(cacheKeyTokens(redAgain), keys);
  assert.notEqual(cacheKeyTokens(blue)[1], keys[1]);
  // Same pixels, another size: another picture.
  const wide = createSequence(4, job([1, IMG, IMG, IMG, 2], [{ offset: 1, numTokens: 3, image: picture(30, 10, 200) }]), 0);
  assert.notEqual(cacheKeyTokens(wide)[1], keys[1]);
  const text = createSequence(5, job(tokens, undefined), 0);
  assert.equal(cacheKeyTokens(text), text.tokens);
});

test('ModelRunner.checkImages: the engine refuses images its encoder would not lay out the same way', () => {
  const model = { config: { vocabSize: 10, hiddenSize: 4 } } as unknown as Model;
  const encoder = { imageTokenId: IMG, layout, encode: () => assert.fail('not encoded when checking') } as VisionEncoder;
  const runner = new ModelRunner(model, [], 16, encoder);
  const seq = (tokens: number[], images: GenerationRequest['images']) => createSequence(1, job(tokens, images), 0);
  const img = picture(20, 10, 1);
  assert.equal(runner.checkImages(seq([1, IMG, IMG, 2], [{ offset: 1, numTokens: 2, image: img }])), null);
  assert.equal(runner.checkImages(seq([1, 2], undefined)), null);
  assert.match(runner.checkImages(seq([1, IMG, IMG, 2], [{ offset: 1, numTokens: 3, image: img }]))!, /token 3 is not the image token/);
  assert.match(runner.checkImages(seq([1, IMG, IMG, IMG], [{ offset: 1, numTokens: 3, image: img }]))!, /takes 2 tokens, not 3/);
  assert.match(runner.checkImages(seq([IMG, IMG, 2], [{ offset: 1, numTokens: 2, image: img }]))!, /not the image token/);
  assert.match(
    runner.checkImages(
      seq(
        [IMG, IMG, IMG],
        [
          { offset: 1, numTokens: 2, image: img },
          { offset: 0, numTokens: 2, image: img },
        ],
      ),
    )!,
    /out of order/,
  );
  const textOnly = new ModelRunner(model, [], 16, null);
  assert.match(textOnly.checkImages(seq([1, IMG, IMG], [{ offset: 1, numTokens: 2, image: img }]))!, /no vision encoder/);
});
