// End to end: a vision model answers about images, through the official `openai` and
// `@anthropic-ai/sdk` clients against the real engine. The model is LLaVA around svc-tiny-chat
// with a small random SigLIP tower (test/helpers/vision-checkpoint.ts): its answers mean nothing,
// so the tests check that the pictures reach the model — each image placeholder becomes the
// tower's 16 tokens (usage), different pictures give different next-token distributions and the
// same picture the same one, whether sent as a data: URL or fetched from an http server on
// 127.0.0.1 — and that the prefix cache never serves one picture's KV for another's.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import sharp from 'sharp';
import { DEFAULT_IMAGE_OPTIONS } from '../../src/server/images/load.js';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';
import { TINY_VISION_TOKENS_PER_IMAGE, writeTinyVisionModel } from '../helpers/vision-checkpoint.js';

let dir: string;
let server: TinyServer;
let imageHost: Server;
let imageBase: string;
const png: Record<string, Buffer> = {};
const dataUrl = (name: string) => `data:image/png;base64,${png[name]!.toString('base64')}`;

/** A picture: left half one colour, right half another (so resizing keeps both). */
async function picture(left: [number, number, number], right: [number, number, number]): Promise<Buffer> {
  const [w, h] = [48, 40];
  const rgb = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rgb.set(x < w / 2 ? left : right, (y * w + x) * 3);
  return sharp(rgb, { raw: { width: w, height: h, channels: 3 } })
    .png()
    .toBuffer();
}

before(async () => {
  png.redBlue = await picture([255, 0, 0], [0, 0, 255]);
  png.greenWhite = await picture([0, 200, 0], [255, 255, 255]);
  imageHost = createServer((req, res) => {
    const name = req.url?.slice(1).replace(/\.png$/, '') ?? '';
    if (png[name]) res.writeHead(200, { 'content-type': 'image/png' }).end(png[name]);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}`;
  dir = writeTinyVisionModel();
  server = await startTinyServer(
    { disableThinking: true },
    // The image server is on loopback: allowed for these tests only.
    { modelName: 'svc-tiny-vision', images: { ...DEFAULT_IMAGE_OPTIONS, allowPrivateUrls: true } },
    { modelPath: dir, enablePrefixCaching: true },
  );
});

after(async () => {
  await server?.close();
  await new Promise((resolve) => imageHost?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Content = OpenAI.Chat.ChatCompletionContentPart[];
const image = (url: string): OpenAI.Chat.ChatCompletionContentPartImage => ({ type: 'image_url', image_url: { url } });
const text = (t: string): OpenAI.Chat.ChatCompletionContentPartText => ({ type: 'text', text: t });

/** One greedy token with its top-5 alternatives, and the usage. */
async function firstToken(content: Content | string) {
  const r = await server.client.chat.completions.create({
    model: 'svc-tiny-vision',
    messages: [{ role: 'user', content }],
    max_tokens: 1,
    temperature: 0,
    logprobs: true,
    top_logprobs: 5,
  });
  const top = r.choices[0]!.logprobs!.content![0]!.top_logprobs.map((t) => [t.token, t.logprob.toFixed(4)]);
  return { top, usage: r.usage! };
}

test('an image placeholder becomes the vision tower’s tokens in the prompt (usage counts them)', async () => {
  const plain = await firstToken('What is in the picture?');
  const one = await firstToken([image(dataUrl('redBlue')), text('What is in the picture?')]);
  const two = await firstToken([image(dataUrl('redBlue')), image(dataUrl('greenWhite')), text('What is in the picture?')]);
  // Each image: <|vision_start|>, its 16 image tokens, <|vision_end|>.
  assert.equal(one.usage.prompt_tokens - plain.usage.prompt_tokens, TINY_VISION_TOKENS_PER_IMAGE + 2);
  assert.equal(two.usage.prompt_tokens - plain.usage.prompt_tokens, 2 * (TINY_VISION_TOKENS_PER_IMAGE + 2));
});

test('the pixels reach the model: another picture changes the next token’s distribution, the same one does not', async () => {
  const question = text('Describe the image.');
  const red = await firstToken([image(dataUrl('redBlue')), question]);
  const green = await firstToken([image(dataUrl('greenWhite')), question]);
  const redAgain = await firstToken([image(dataUrl('redBlue')), question]);
  assert.notDeepEqual(red.top, green.top);
  assert.deepEqual(redAgain.top, red.top);
});

test('an http image URL (fetched from 127.0.0.1) reaches the model like the same picture as a data: URL', async () => {
  const question = text('And this one?');
  const fetched = await firstToken([image(`${imageBase}/greenWhite.png`), question]);
  const inline = await firstToken([image(dataUrl('greenWhite')), question]);
  assert.deepEqual(fetched.top, inline.top);
  assert.equal(fetched.usage.prompt_tokens, inline.usage.prompt_tokens);
});

test('prefix caching: a repeated picture is served from the cache, another picture after the same text is not', async () => {
  const long = text('Please look very carefully at every part of this picture and then tell me, in detail, what it shows.');
  const first = await firstToken([long, image(dataUrl('redBlue'))]);
  const again = await firstToken([long, image(dataUrl('redBlue'))]);
  const other = await firstToken([long, image(dataUrl('greenWhite'))]);
  const cached = (u: OpenAI.CompletionUsage) => u.prompt_tokens_details?.cached_tokens ?? 0;
  const imageEnd = first.usage.prompt_tokens - 5; // the image's tokens end a few tokens before the prompt does
  assert.ok(cached(again.usage) >= imageEnd - 16, `the repeated picture's prompt is cached (${cached(again.usage)} tokens)`);
  assert.ok(cached(other.usage) < cached(again.usage), 'a new picture is not read from the other picture’s blocks');
  assert.ok(cached(other.usage) <= first.usage.prompt_tokens - 5 - TINY_VISION_TOKENS_PER_IMAGE, 'the cache stops before the new picture');
  assert.deepEqual(again.top, first.top, 'the cached prompt gives what the computed one gave');
  assert.notDeepEqual(other.top, first.top, "the other picture's answer is its own");
});

test('streaming with an image, and the Responses and Anthropic protocols take images too', async () => {
  const stream = await server.client.chat.completions.create({
    model: 'svc-tiny-vision',
    messages: [{ role: 'user', content: [image(dataUrl('redBlue')), text('What colour?')] }],
    max_tokens: 8,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: OpenAI.CompletionUsage | undefined;
  let chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
  }
  assert.ok(chunks > 1);
  assert.ok(usage && usage.prompt_tokens > TINY_VISION_TOKENS_PER_IMAGE);

  const response = await server.client.responses.create({
    model: 'svc-tiny-vision',
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_image', image_url: dataUrl('redBlue'), detail: 'auto' },
          { type: 'input_text', text: 'What colour?' },
        ],
      },
    ],
    max_output_tokens: 8,
    temperature: 0,
    store: false,
  });
  assert.ok(['completed', 'incomplete'].includes(response.status!), response.status); // incomplete: max_output_tokens
  assert.ok(response.usage!.input_tokens > TINY_VISION_TOKENS_PER_IMAGE);

  const anthropic = new Anthropic({ baseURL: server.base, apiKey: 'x', maxRetries: 0 });
  const message = await anthropic.messages.create({
    model: 'svc-tiny-vision',
    max_tokens: 8,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.redBlue!.toString('base64') } },
          { type: 'text', text: 'What colour?' },
        ],
      },
    ],
  });
  // Anthropic's input_tokens leave out what was read from the cache.
  const input = message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0);
  assert.ok(input > TINY_VISION_TOKENS_PER_IMAGE);
  const counted = await anthropic.messages.countTokens({
    model: 'svc-tiny-vision',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.redBlue!.toString('base64') } },
          { type: 'text', text: 'What colour?' },
        ],
      },
    ],
  });
  assert.equal(counted.input_tokens, input);
});

test('an image token typed into the text is refused with a 400 instead of shifting the pictures', async () => {
  await assert.rejects(
    server.client.chat.completions.create({
      model: 'svc-tiny-vision',
      messages: [{ role: 'user', content: [image(dataUrl('redBlue')), text('look: <|image_pad|>')] }],
      max_tokens: 1,
    }),
    (e: { status?: number; error?: { code?: string } }) => e.status === 400 && e.error?.code === 'image_placeholder_mismatch',
  );
  // The server goes on serving.
  const ok = await firstToken([image(dataUrl('redBlue')), text('fine')]);
  assert.ok(ok.top.length > 0);
});
