// End to end: image input on all three protocols against the real engine running svc-tiny-chat
// (text-only), driven by the official `openai` and `@anthropic-ai/sdk` clients. Every image is
// loaded (decoded, or fetched and decoded) before the model's lack of vision support is reported,
// so each bad image gets its own 400, and a good one gets "no vision support" only after it was
// read: the local image server counts its requests and the server's debug log line `image loaded`
// says what was decoded. Image URLs point at a server on 127.0.0.1 only; no test traffic goes
// anywhere else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { pino } from 'pino';
import sharp from 'sharp';
import { DEFAULT_IMAGE_OPTIONS, type ImageOptions } from '../../src/server/images/load.js';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

/** The app's image settings: one object, changed by tests (and put back) between requests. */
const images: ImageOptions = { ...DEFAULT_IMAGE_OPTIONS, fetchTimeoutSec: 1 };
const logLines: { msg: string; from?: string; width?: number; height?: number; format?: string; param?: string }[] = [];

let server: TinyServer;
let anthropic: Anthropic;
let imageHost: Server;
let imageBase: string;
let closedPort: number;
const hits: string[] = [];
let redPng: Buffer;
let redDataUrl: string;

before(async () => {
  redPng = await sharp({ create: { width: 5, height: 3, channels: 3, background: { r: 255, g: 0, b: 0 } } })
    .png()
    .toBuffer();
  redDataUrl = `data:image/png;base64,${redPng.toString('base64')}`;
  imageHost = createServer((req, res) => {
    hits.push(req.url!);
    switch (req.url) {
      case '/red.png':
        res.writeHead(200, { 'content-type': 'image/png' }).end(redPng);
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/slow':
        setTimeout(() => res.writeHead(200, { 'content-type': 'image/png' }).end(redPng), 3000).unref();
        return;
      case '/page':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>not an image</body></html>');
        return;
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}`;
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
  closedPort = (gone.address() as AddressInfo).port;
  await new Promise((resolve) => gone.close(resolve));

  const logStream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') logLines.push(JSON.parse(line));
      done();
    },
  });
  server = await startTinyServer({ disableThinking: false }, { images }, {}, { logger: pino({ level: 'debug' }, logStream) });
  anthropic = new Anthropic({ baseURL: server.base, apiKey: 'x', maxRetries: 0 });
});
after(async () => {
  await server?.close();
  imageHost?.close();
});

/** The chat request with a text and the image at `url`. */
function chatWithImage(url: string): OpenAI.ChatCompletionCreateParamsNonStreaming {
  return {
    model: 'm',
    max_tokens: 4,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url } },
        ],
      },
    ],
  };
}

/** The OpenAI-shaped error a call failed with (it must fail with 400). */
async function openAiError(call: Promise<unknown>): Promise<{ code: string; param: string; message: string }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 400, err.message);
    const body = err.error as { code: string; param: string; message: string; type: string };
    assert.equal(body.type, 'invalid_request_error');
    return body;
  }
  assert.fail('the request succeeded');
}

/** The Anthropic-shaped error a call failed with (it must fail with 400). */
async function anthropicError(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.status, 400, err.message);
    const body = err.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    return body.error.message;
  }
  assert.fail('the request succeeded');
}

const loaded = () => logLines.filter((l) => l.msg === 'image loaded');

test('a data-URL image → 400 "no vision support" on chat completions, Responses and Messages, after it was decoded', async () => {
  logLines.length = 0;
  const chat = await openAiError(server.client.chat.completions.create(chatWithImage(redDataUrl)));
  assert.equal(chat.code, 'no_vision_support');
  assert.equal(chat.param, 'messages[0].content[1]');
  assert.match(chat.message, /The model 'svc-tiny-chat' has no vision support/);

  const responses = await openAiError(
    server.client.responses.create({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Describe it.' },
            { type: 'input_image', image_url: redDataUrl, detail: 'auto' },
          ],
        },
      ],
    }),
  );
  assert.equal(responses.code, 'no_vision_support');
  assert.equal(responses.param, 'input.0.content.1.image_url');

  const messages = await anthropicError(
    anthropic.messages.create({
      model: 'm',
      max_tokens: 4,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: redPng.toString('base64') } },
            { type: 'text', text: 'Describe it.' },
          ],
        },
      ],
    }),
  );
  assert.match(messages, /no vision support/);

  // Decoded each time before the refusal: 5×3 PNG from inline data.
  assert.deepEqual(
    loaded().map((l) => [l.from, l.format, l.width, l.height]),
    Array(3).fill(['data', 'png', 5, 3]),
  );
  // count_tokens and /tokenize load images the same way.
  const count = await fetch(`${server.base}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'bad!' } }] }],
    }),
  });
  assert.equal(count.status, 400);
  assert.match(((await count.json()) as { error: { message: string } }).error.message, /messages\.0\.content\.0.*not valid base64/);
  const tokenize = await fetch(`${server.base}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: chatWithImage(redDataUrl).messages }),
  });
  assert.equal(tokenize.status, 400);
  assert.equal(((await tokenize.json()) as { error: { code: string } }).error.code, 'no_vision_support');
});

test('bad images: bad base64, a wrong media type, undecodable bytes, oversize (bytes, pixels, count) — each a 400 naming the problem', async () => {
  const bad = async (url: string, code: string, message: RegExp) => {
    const e = await openAiError(server.client.chat.completions.create(chatWithImage(url)));
    assert.equal(e.code, code, e.message);
    assert.equal(e.param, 'messages[0].content[1]');
    assert.match(e.message, /^Invalid image in 'messages\[0\]\.content\[1\]': /);
    assert.match(e.message, message);
  };
  await bad('data:image/png;base64,iVBOR%%%', 'invalid_image', /not valid base64/);
  await bad(`data:text/plain;base64,${Buffer.from('hello').toString('base64')}`, 'invalid_image', /media type 'text\/plain'/);
  await bad(
    `data:image/png;base64,${Buffer.from('these bytes are not a picture').toString('base64')}`,
    'invalid_image',
    /not a JPEG, PNG, WebP or GIF/,
  );
  await bad(`data:image/png;base64,${redPng.subarray(0, 40).toString('base64')}`, 'invalid_image', /PNG image could not be decoded/);
  const noise = await sharp({
    create: { width: 64, height: 64, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  })
    .png()
    .toBuffer();
  // Two million pixels in about 2 KB (under the byte cap below): the pixel cap is read from the header.
  const wide = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#fff' } })
    .png({ palette: true, compressionLevel: 9 })
    .toBuffer();
  assert.ok(wide.length < 4096);
  Object.assign(images, { maxBytes: 4096, maxPixels: 1_000_000, maxImages: 1 });
  try {
    await bad(
      `data:image/png;base64,${noise.toString('base64')}`,
      'image_too_large',
      new RegExp(`${noise.length} bytes, over the limit of 4096 bytes \\(--max-image-bytes\\)`),
    );
    await bad(
      `data:image/png;base64,${wide.toString('base64')}`,
      'image_too_large',
      /2000x1000 = 2000000 pixels, over the limit of 1000000 pixels \(--max-image-pixels\)/,
    );
    const body = chatWithImage(redDataUrl);
    (body.messages[0]!.content as OpenAI.ChatCompletionContentPart[]).push({ type: 'image_url', image_url: { url: redDataUrl } });
    const many = await openAiError(server.client.chat.completions.create(body));
    assert.equal(many.code, 'too_many_images');
    assert.match(many.message, /2 images, over the limit of 1 per request \(--max-images-per-request\)/);
  } finally {
    Object.assign(images, {
      maxBytes: DEFAULT_IMAGE_OPTIONS.maxBytes,
      maxPixels: DEFAULT_IMAGE_OPTIONS.maxPixels,
      maxImages: DEFAULT_IMAGE_OPTIONS.maxImages,
    });
  }
  // Image parts outside user messages, and in Anthropic's and Responses' shapes.
  const assistantImage = await openAiError(
    server.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'image_url', image_url: { url: redDataUrl } }] as never },
      ],
    }),
  );
  assert.match(assistantImage.message, /user messages only/);
  const anthropicBad = await anthropicError(
    anthropic.messages.create({
      model: 'm',
      max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '@@@@' } }] }],
    }),
  );
  assert.match(anthropicBad, /^Invalid image in 'messages\.0\.content\.0': the image data is not valid base64/);
  const anthropicType = await anthropicError(
    anthropic.messages.create({
      model: 'm',
      max_tokens: 4,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp' as never, data: 'AAAA' } }] },
      ],
    }),
  );
  assert.match(anthropicType, /media type 'image\/bmp'/);
});

test('URLs: loopback refused without --allow-private-image-urls (nothing is fetched); unreachable hosts named', async () => {
  hits.length = 0;
  const port = new URL(imageBase).port;
  for (const url of [`${imageBase}/red.png`, `http://localhost:${port}/red.png`, `http://[::1]:${port}/red.png`]) {
    const e = await openAiError(server.client.chat.completions.create(chatWithImage(url)));
    assert.equal(e.code, 'image_url_forbidden', e.message);
    assert.match(
      e.message,
      /loopback address; fetching from loopback, private and link-local addresses is off .*--allow-private-image-urls/,
    );
  }
  const responses = await openAiError(
    server.client.responses.create({
      model: 'm',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: `${imageBase}/red.png`, detail: 'auto' }] }],
    }),
  );
  assert.equal(responses.code, 'image_url_forbidden');
  const messages = await anthropicError(
    anthropic.messages.create({
      model: 'm',
      max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `http://localhost:${port}/red.png` } }] }],
    }),
  );
  assert.match(messages, /'localhost' resolves to .* loopback address/);
  assert.deepEqual(hits, [], 'the image server was never contacted');

  images.allowPrivateUrls = true;
  try {
    const e = await openAiError(server.client.chat.completions.create(chatWithImage(`http://127.0.0.1:${closedPort}/x.png`)));
    assert.equal(e.code, 'image_fetch_failed');
    assert.match(e.message, /could not be fetched: the connection to '127\.0\.0\.1' was refused/);
  } finally {
    images.allowPrivateUrls = false;
  }
});

test('with --allow-private-image-urls an http URL on 127.0.0.1 is fetched and decoded, then refused for lack of vision; fetch limits hold', async () => {
  images.allowPrivateUrls = true;
  try {
    hits.length = 0;
    logLines.length = 0;
    const e = await openAiError(server.client.chat.completions.create(chatWithImage(`${imageBase}/red.png`)));
    assert.equal(e.code, 'no_vision_support');
    const m = await anthropicError(
      anthropic.messages.create({
        model: 'm',
        max_tokens: 4,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${imageBase}/red.png` } }] }],
      }),
    );
    assert.match(m, /no vision support/);
    assert.deepEqual(hits, ['/red.png', '/red.png']);
    const host = new URL(imageBase).host;
    assert.deepEqual(
      loaded().map((l) => [l.from, l.format, l.width, l.height]),
      [
        [host, 'png', 5, 3],
        [host, 'png', 5, 3],
      ],
    );

    const failed = async (path: string, message: RegExp) => {
      const err = await openAiError(server.client.chat.completions.create(chatWithImage(`${imageBase}${path}`)));
      assert.equal(err.code, 'image_fetch_failed', err.message);
      assert.match(err.message, message);
    };
    hits.length = 0;
    await failed('/loop', /more than 5 redirects/);
    assert.equal(hits.length, 6, 'the first request and 5 redirects');
    const started = Date.now();
    await failed('/slow', /no complete answer within 1 s \(--image-fetch-timeout\)/);
    assert.ok(Date.now() - started < 2500, 'the timeout, not the slow answer, ended it');
    await failed('/page', /content type 'text\/html', not an image/);
    await failed('/missing.png', /answered HTTP 404/);
  } finally {
    images.allowPrivateUrls = false;
  }
});

test('the server keeps serving after every error: a text chat, a stream and a Messages call', async () => {
  const chat = await server.client.chat.completions.create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'Hello' }] });
  assert.equal(chat.object, 'chat.completion');
  const stream = await server.client.chat.completions.create({
    model: 'm',
    max_tokens: 4,
    stream: true,
    messages: [{ role: 'user', content: 'Hi' }],
  });
  let chunks = 0;
  for await (const _ of stream) chunks++;
  assert.ok(chunks > 0);
  const msg = await anthropic.messages.create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] });
  assert.equal(msg.type, 'message');
});
