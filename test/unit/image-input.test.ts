// The image input pipeline (src/server/images/): the address classifier on literal addresses (no
// connection made), data: URLs and base64, decoding with sharp (images made here with sharp
// itself), the caps, the guarded fetcher against local servers on loopback only, the one loader
// every protocol funnels into, and image parts as a vision chat template sees them.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import sharp, { type Sharp } from 'sharp';
import { classifyAddress } from '../../src/server/images/address.js';
import { base64Size, decodeBase64, parseDataUrl } from '../../src/server/images/data-url.js';
import { decodeImage, sniffFormat } from '../../src/server/images/decode.js';
import { fetchImage, MAX_IMAGE_REDIRECTS, type FetchLimits } from '../../src/server/images/fetch.js';
import { ImageInputError } from '../../src/server/images/image-error.js';
import { DEFAULT_IMAGE_OPTIONS, loadChatImages, loadImage } from '../../src/server/images/load.js';
import { addText, imageParts, mapText, partsMessage, type ChatMessage, type ChatRequest } from '../../src/chat/request.js';
import { chatTemplateInput } from '../../src/chat/prompt.js';
import { renderChatTemplate } from '../../src/chat/template.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import { ApiError } from '../../src/common/api-error.js';

// ---------------------------------------------------------------------------------------------
// The address classifier (literal addresses only)

test('classifyAddress: IPv4 loopback, private, link-local, CGNAT, special ranges and public', () => {
  const cases: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.1', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
  ];
  for (const [ip, cls] of cases) assert.equal(classifyAddress(ip), cls, ip);
});

test('classifyAddress: IPv6 loopback, unique-local, link-local, mapped and embedded IPv4, public; non-addresses are null', () => {
  const cases: [string, string][] = [
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:8.8.8.8', 'public'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1
    ['64:ff9b::808:808', 'public'], // NAT64 of 8.8.8.8
    ['2002:c0a8:0101::1', 'private'], // 6to4 of 192.168.1.1
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'], // Teredo
    ['100::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001::200e', 'public'],
    ['4000::1', 'reserved'],
  ];
  for (const [ip, cls] of cases) assert.equal(classifyAddress(ip), cls, ip);
  for (const notIp of ['localhost', 'example.com', '127.1', '1.2.3.4.5', '']) assert.equal(classifyAddress(notIp), null, notIp);
});

// ---------------------------------------------------------------------------------------------
// data: URLs and base64

const rejects = (fn: () => unknown, code: string, message: RegExp) =>
  assert.throws(fn, (e: unknown) => e instanceof ImageInputError && e.code === code && message.test(e.message));

test('data: URLs: the media type must be an image type svc decodes; base64 is checked strictly; the size is capped before decoding', () => {
  const { mediaType, bytes } = parseDataUrl('data:image/png;base64,AAEC', 100);
  assert.equal(mediaType, 'image/png');
  assert.deepEqual([...bytes], [0, 1, 2]);
  assert.equal(parseDataUrl('DATA:Image/JPG;name=x.jpg;base64,AAECAw==', 100).mediaType, 'image/jpeg');
  rejects(() => parseDataUrl('data:text/plain;base64,AAEC', 100), 'invalid_image', /media type 'text\/plain'/);
  rejects(() => parseDataUrl('data:image/svg+xml;base64,AAEC', 100), 'invalid_image', /image\/svg\+xml/);
  rejects(() => parseDataUrl('data:;base64,AAEC', 100), 'invalid_image', /names no media type/);
  rejects(() => parseDataUrl('data:image/png,rawbytes', 100), 'invalid_image', /not base64/);
  rejects(() => parseDataUrl('data:image/png;base64', 100), 'invalid_image', /no ','/);
  rejects(() => parseDataUrl('data:image/png;base64,AA!C', 100), 'invalid_image', /not valid base64/);
  rejects(() => parseDataUrl('data:image/png;base64,AAE C', 100), 'invalid_image', /not valid base64/);
  rejects(() => parseDataUrl('data:image/png;base64,A=AA', 100), 'invalid_image', /not valid base64/);
  rejects(() => parseDataUrl('data:image/png;base64,AAECA', 100), 'invalid_image', /not valid base64/);
  rejects(() => parseDataUrl('data:image/png;base64,', 100), 'invalid_image', /empty/);
  // Unpadded base64 is read; the decoded size is known from the length.
  assert.deepEqual([...decodeBase64('AAECAw', 100)], [0, 1, 2, 3]);
  assert.equal(base64Size('AAECAw=='), 4);
  rejects(() => decodeBase64('A'.repeat(400), 299), 'image_too_large', /300 bytes, over the limit of 299 bytes \(--max-image-bytes\)/);
});

// ---------------------------------------------------------------------------------------------
// Decoding

const RED = { r: 255, g: 0, b: 0 };
const solid = (width: number, height: number, colour: object, channels: 3 | 4 = 3) =>
  sharp({ create: { width, height, channels, background: colour } });
const pixel = (img: { width: number; rgb: Uint8Array }, x: number, y: number) => [
  ...img.rgb.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3),
];
const near = (actual: number[], expected: number[], tolerance = 8) =>
  assert.ok(
    actual.every((v, i) => Math.abs(v - expected[i]!) <= tolerance),
    `${actual} ≈ ${expected}`,
  );
const LIMITS = { maxPixels: DEFAULT_IMAGE_OPTIONS.maxPixels };

test('decode: JPEG, PNG, WebP and GIF into 8-bit RGB HWC with their dimensions and colours', async () => {
  const encoders = {
    jpeg: (s: Sharp) => s.jpeg({ quality: 95 }),
    png: (s: Sharp) => s.png(),
    webp: (s: Sharp) => s.webp({ lossless: true }),
    gif: (s: Sharp) => s.gif(),
  };
  for (const [format, encode] of Object.entries(encoders)) {
    const bytes = await encode(solid(7, 5, { r: 30, g: 200, b: 90 })).toBuffer();
    assert.equal(sniffFormat(bytes), format);
    const img = await decodeImage(bytes, LIMITS);
    assert.equal(img.format, format);
    assert.equal(img.width, 7);
    assert.equal(img.height, 5);
    assert.equal(img.rgb.length, 7 * 5 * 3);
    near(pixel(img, 6, 4), [30, 200, 90], format === 'gif' ? 24 : 8);
  }
  // Row-major HWC: a left half red and a right half blue tell x from y.
  const halves = await solid(4, 2, RED)
    .composite([{ input: await solid(2, 2, { r: 0, g: 0, b: 255 }).png().toBuffer(), left: 2, top: 0 }])
    .png()
    .toBuffer();
  const img = await decodeImage(halves, LIMITS);
  assert.deepEqual(pixel(img, 0, 1), [255, 0, 0]);
  assert.deepEqual(pixel(img, 3, 1), [0, 0, 255]);
});

test('decode: alpha is composited onto white; grey becomes RGB; 16-bit becomes 8-bit; a GIF gives its first frame', async () => {
  const transparent = await solid(2, 2, { r: 0, g: 0, b: 0, alpha: 0 }, 4).png().toBuffer();
  assert.deepEqual(pixel(await decodeImage(transparent, LIMITS), 0, 0), [255, 255, 255]);
  const halfRed = await solid(2, 2, { ...RED, alpha: 0.5 }, 4)
    .png()
    .toBuffer();
  near(pixel(await decodeImage(halfRed, LIMITS), 1, 1), [255, 127, 127], 2);
  const grey = await solid(3, 3, { r: 100, g: 100, b: 100 }).greyscale().toColourspace('b-w').png().toBuffer();
  assert.equal((await sharp(grey).metadata()).channels, 1);
  const g = await decodeImage(grey, LIMITS);
  assert.equal(g.rgb.length, 27);
  near(pixel(g, 2, 2), [100, 100, 100], 2);
  const deep = await solid(2, 2, RED).toColourspace('rgb16').png().toBuffer();
  assert.equal((await sharp(deep).metadata()).depth, 'ushort');
  assert.deepEqual(pixel(await decodeImage(deep, LIMITS), 0, 0), [255, 0, 0]);
  // Two frames, 4×4 each: green then blue.
  const frames = Buffer.alloc(4 * 8 * 3);
  for (let i = 0; i < 4 * 8; i++) frames.set(i < 16 ? [0, 255, 0] : [0, 0, 255], i * 3);
  const gif = await sharp(frames, { raw: { width: 4, height: 8, channels: 3, pageHeight: 4 } })
    .gif()
    .toBuffer();
  assert.equal((await sharp(gif).metadata()).pages, 2);
  const first = await decodeImage(gif, LIMITS);
  assert.deepEqual([first.width, first.height], [4, 4]);
  near(pixel(first, 3, 3), [0, 255, 0], 24);
});

test('decode: the pixel cap is checked from the header; other formats and corrupt bytes are refused', async () => {
  const big = await solid(300, 200, RED).png().toBuffer();
  await assert.rejects(
    decodeImage(big, { maxPixels: 59_999 }),
    (e: ImageInputError) => e.code === 'image_too_large' && /300x200 = 60000 pixels, over the limit of 59999 pixels/.test(e.message),
  );
  assert.equal((await decodeImage(big, { maxPixels: 60_000 })).width, 300);
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>');
  await assert.rejects(
    decodeImage(svg, LIMITS),
    (e: ImageInputError) => e.code === 'invalid_image' && /not a JPEG, PNG, WebP or GIF/.test(e.message),
  );
  const tiff = await solid(2, 2, RED).tiff().toBuffer();
  await assert.rejects(decodeImage(tiff, LIMITS), /not a JPEG, PNG, WebP or GIF/);
  await assert.rejects(decodeImage(Buffer.from('hello'), LIMITS), /not a JPEG, PNG, WebP or GIF/);
  const png = await solid(64, 64, RED).png().toBuffer();
  await assert.rejects(
    decodeImage(png.subarray(0, 40), LIMITS),
    (e: ImageInputError) => e.code === 'invalid_image' && /PNG image could not be decoded/.test(e.message),
  );
  const jpeg = await sharp(Buffer.alloc(64 * 64 * 3, 77), { raw: { width: 64, height: 64, channels: 3 } })
    .jpeg()
    .toBuffer();
  await assert.rejects(decodeImage(jpeg.subarray(0, jpeg.length >> 1), LIMITS), /JPEG image could not be decoded/);
});

// ---------------------------------------------------------------------------------------------
// The guarded fetcher, against a server on 127.0.0.1 only

const servers: Server[] = [];
after(() => servers.forEach((s) => s.close()));

async function imageServer(): Promise<{ base: string; port: number; hits: string[] }> {
  const png = await solid(5, 3, RED).png().toBuffer();
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url!);
    const url = new URL(req.url!, 'http://x');
    switch (url.pathname) {
      case '/red.png':
        res.writeHead(200, { 'content-type': 'image/png' }).end(png);
        return;
      case '/untyped':
        res.writeHead(200).end(png);
        return;
      case '/page':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<html></html>');
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/hop': {
        const n = Number(url.searchParams.get('n'));
        res.writeHead(302, { location: n > 0 ? `/hop?n=${n - 1}` : '/red.png' }).end();
        return;
      }
      case '/to':
        res.writeHead(307, { location: url.searchParams.get('url')! }).end();
        return;
      case '/slow':
        setTimeout(() => res.writeHead(200, { 'content-type': 'image/png' }).end(png), 3000).unref();
        return;
      case '/trickle':
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(png.subarray(0, 10));
        return;
      case '/declared-big':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(10_000_000) });
        res.write(png);
        return;
      case '/chunked-big':
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(Buffer.alloc(5000));
        return;
      default:
        res.writeHead(404).end();
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { base: `http://127.0.0.1:${port}`, port, hits };
}

const OPEN: FetchLimits = { maxBytes: 4096, timeoutMs: 1000, allowPrivate: true };
const fetchRejects = (p: Promise<unknown>, code: string, message: RegExp) =>
  assert.rejects(p, (e: unknown) => e instanceof ImageInputError && e.code === code && message.test(e.message));

test('fetch: loopback refused without the flag (literal and by name, before any connection); fetched with it', async () => {
  const { base, port, hits } = await imageServer();
  const closed: FetchLimits = { ...OPEN, allowPrivate: false };
  await fetchRejects(
    fetchImage(`${base}/red.png`, closed),
    'image_url_forbidden',
    /host '127\.0\.0\.1' is a loopback address.*--allow-private-image-urls/,
  );
  await fetchRejects(
    fetchImage(`http://localhost:${port}/red.png`, closed),
    'image_url_forbidden',
    /'localhost' resolves to .*, which is a loopback address/,
  );
  await fetchRejects(fetchImage(`http://[::1]:${port}/red.png`, closed), 'image_url_forbidden', /'::1' is a loopback address/);
  await fetchRejects(fetchImage(`http://[::ffff:127.0.0.1]:${port}/red.png`, closed), 'image_url_forbidden', /loopback/);
  await fetchRejects(fetchImage(`http://0x7f.1:${port}/red.png`, closed), 'image_url_forbidden', /'127\.0\.0\.1' is a loopback/);
  assert.deepEqual(hits, [], 'nothing reached the server');
  const got = await fetchImage(`${base}/red.png`, OPEN);
  assert.equal(got.contentType, 'image/png');
  assert.equal(sniffFormat(got.bytes), 'png');
  assert.equal((await fetchImage(`http://localhost:${port}/untyped`, OPEN)).contentType, '');
});

test('fetch: every redirect is checked anew, and every address a name resolves to', async () => {
  const { base, port, hits } = await imageServer();
  // Only 127.0.0.1 may be reached: a redirect to another loopback address, or to a name that also
  // resolves to ::1, is refused without connecting there.
  const only = { ...OPEN, allowAddress: (address: string) => address === '127.0.0.1' };
  assert.equal(sniffFormat((await fetchImage(`${base}/to?url=${encodeURIComponent(`${base}/red.png`)}`, only)).bytes), 'png');
  await fetchRejects(
    fetchImage(`${base}/to?url=${encodeURIComponent(`http://127.0.0.2:${port}/red.png`)}`, only),
    'image_url_forbidden',
    /'127\.0\.0\.2'/,
  );
  hits.length = 0;
  const localhostOnBoth = await import('node:dns').then((dns) => dns.promises.lookup('localhost', { all: true }));
  if (localhostOnBoth.some((a) => a.address !== '127.0.0.1')) {
    await fetchRejects(
      fetchImage(`${base}/to?url=${encodeURIComponent(`http://localhost:${port}/red.png`)}`, only),
      'image_url_forbidden',
      /'localhost' resolves to/,
    );
    assert.deepEqual(hits, ['/to?url=' + encodeURIComponent(`http://localhost:${port}/red.png`)]);
  }
  await fetchRejects(
    fetchImage(`${base}/to?url=${encodeURIComponent('file:///etc/passwd')}`, OPEN),
    'image_fetch_failed',
    /scheme 'file:'/,
  );
});

test('fetch: the redirect cap, the timeout, the content type, HTTP errors, the size cap, unreachable hosts', async () => {
  const { base } = await imageServer();
  assert.equal(sniffFormat((await fetchImage(`${base}/hop?n=${MAX_IMAGE_REDIRECTS - 1}`, OPEN)).bytes), 'png');
  await fetchRejects(fetchImage(`${base}/hop?n=${MAX_IMAGE_REDIRECTS}`, OPEN), 'image_fetch_failed', /more than 5 redirects/);
  await fetchRejects(fetchImage(`${base}/loop`, OPEN), 'image_fetch_failed', /more than 5 redirects/);
  const started = Date.now();
  await fetchRejects(
    fetchImage(`${base}/slow`, { ...OPEN, timeoutMs: 300 }),
    'image_fetch_failed',
    /within 0\.3 s \(--image-fetch-timeout\)/,
  );
  await fetchRejects(fetchImage(`${base}/trickle`, { ...OPEN, timeoutMs: 300 }), 'image_fetch_failed', /within 0\.3 s/);
  assert.ok(Date.now() - started < 2000);
  await fetchRejects(fetchImage(`${base}/page`, OPEN), 'image_fetch_failed', /content type 'text\/html', not an image/);
  await fetchRejects(fetchImage(`${base}/nope`, OPEN), 'image_fetch_failed', /answered HTTP 404/);
  await fetchRejects(fetchImage(`${base}/declared-big`, OPEN), 'image_too_large', /10000000 bytes, over the limit of 4096/);
  await fetchRejects(fetchImage(`${base}/chunked-big`, OPEN), 'image_too_large', /over the limit of 4096 bytes/);
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
  const port = (gone.address() as AddressInfo).port;
  await new Promise((resolve) => gone.close(resolve));
  await fetchRejects(fetchImage(`http://127.0.0.1:${port}/x.png`, OPEN), 'image_fetch_failed', /connection to '127\.0\.0\.1' was refused/);
  await fetchRejects(fetchImage('not a url', OPEN), 'invalid_image', /not a valid URL/);
  await fetchRejects(fetchImage('ftp://127.0.0.1/x.png', OPEN), 'invalid_image', /scheme 'ftp:'/);
});

// ---------------------------------------------------------------------------------------------
// The one loader, and the request's images

const quiet = pino({ level: 'silent' });

function chatWith(messages: ChatMessage[]): ChatRequest {
  return { messages } as ChatRequest;
}

test('loadImage: base64 sources, data: URLs and http URLs come out as the same DecodedImage', async () => {
  const { base } = await imageServer();
  const png = await solid(5, 3, RED).png().toBuffer();
  const options = { ...DEFAULT_IMAGE_OPTIONS, allowPrivateUrls: true };
  const fromBase64 = await loadImage({ kind: 'base64', mediaType: 'image/png', data: png.toString('base64') }, options);
  const fromData = await loadImage({ kind: 'url', url: `data:image/png;base64,${png.toString('base64')}` }, options);
  const fromUrl = await loadImage({ kind: 'url', url: `${base}/red.png` }, options);
  for (const loaded of [fromBase64, fromData, fromUrl]) {
    assert.deepEqual([loaded.image.width, loaded.image.height, loaded.format], [5, 3, 'png']);
    assert.deepEqual(loaded.image.rgb, fromBase64.image.rgb);
  }
  assert.equal(fromData.from, 'data');
  assert.equal(fromUrl.from, new URL(base).host);
  // A declared type must be an image type; the bytes' signature picks the decoder.
  await assert.rejects(loadImage({ kind: 'base64', mediaType: 'application/pdf', data: 'AAAA' }, options), /media type 'application\/pdf'/);
  assert.equal((await loadImage({ kind: 'base64', mediaType: 'image/jpeg', data: png.toString('base64') }, options)).format, 'png');
});

test('loadChatImages: every image loaded in order, the first failing one named; a text-only model refuses after loading', async () => {
  const png = (colour: object) =>
    solid(2, 2, colour)
      .png()
      .toBuffer()
      .then((b) => `data:image/png;base64,${b.toString('base64')}`);
  const [red, blue] = [await png(RED), await png({ r: 0, g: 0, b: 255 })];
  const messages = [
    partsMessage(
      'user',
      [
        { type: 'text', text: 'a' },
        { type: 'image', source: { kind: 'url', url: red }, param: 'm[0].c[1]' },
      ],
      '\n',
    ),
    { role: 'assistant', content: 'ok' } as ChatMessage,
    partsMessage('user', [{ type: 'image', source: { kind: 'url', url: blue }, param: 'm[2].c[0]' }], '\n'),
  ];
  const textOnly = { vision: null } as unknown as ModelRuntime;
  const vision = { vision: { layout: { imageTokenId: 7, tokensFor: () => ({ numTokens: 4 }) } } } as unknown as ModelRuntime;
  const opts = { modelName: 'tiny', images: DEFAULT_IMAGE_OPTIONS };
  await assert.rejects(
    loadChatImages(chatWith(messages), textOnly, opts, quiet),
    (e: ApiError) =>
      e.status === 400 && e.code === 'no_vision_support' && e.param === 'm[0].c[1]' && /'tiny' has no vision support/.test(e.message),
  );
  const loaded = await loadChatImages(chatWith(messages), vision, opts, quiet);
  const images = imageParts(loaded.messages).map((p) => p.image!);
  assert.deepEqual(
    images.map((i) => pixel(i, 0, 0)),
    [
      [255, 0, 0],
      [0, 0, 255],
    ],
  );
  assert.equal(imageParts(messages)[0]!.image, undefined, 'the request given is left as it was');
  // A text-only request is returned as it is, on any model.
  const plain = chatWith([{ role: 'user', content: 'hi' }]);
  assert.equal(await loadChatImages(plain, textOnly, opts, quiet), plain);
  // The first image (in request order) that fails is the one named, with its problem.
  const bad = [
    partsMessage('user', [{ type: 'image', source: { kind: 'url', url: red }, param: 'ok' }], '\n'),
    partsMessage('user', [{ type: 'image', source: { kind: 'url', url: 'data:image/png;base64,@@@@' }, param: 'broken' }], '\n'),
  ];
  await assert.rejects(
    loadChatImages(chatWith(bad), vision, opts, quiet),
    (e: ApiError) =>
      e.status === 400 &&
      e.code === 'invalid_image' &&
      e.param === 'broken' &&
      /^Invalid image in 'broken': the image data is not valid base64/.test(e.message),
  );
  const many = Array.from({ length: 3 }, (_, i) =>
    partsMessage('user', [{ type: 'image', source: { kind: 'url', url: red }, param: `p${i}` }], '\n'),
  );
  await assert.rejects(
    loadChatImages(chatWith(many), vision, { ...opts, images: { ...DEFAULT_IMAGE_OPTIONS, maxImages: 2 } }, quiet),
    (e: ApiError) => e.code === 'too_many_images' && e.param === 'p2' && /3 images, over the limit of 2/.test(e.message),
  );
});

// ---------------------------------------------------------------------------------------------
// Image parts in the chat template, and in compaction's text edits

const QWEN2_VL_STYLE =
  "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}" +
  "{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>" +
  "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}" +
  '{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';
const LLAVA_STYLE =
  "{% for message in messages %}{{ message['role'].upper() }}: {% if message['content'] is string %}{{ message['content'] }}" +
  "{% else %}{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<image>\\n' }}{% else %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}" +
  '{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}';

test('templates get image parts in the HF shape ({type: image}) where they were, and write their placeholders', () => {
  const image = (param: string) => ({ type: 'image' as const, source: { kind: 'url' as const, url: 'data:x' }, param });
  const chat = {
    messages: [
      { role: 'system', content: 'Be brief.' },
      partsMessage('user', [{ type: 'text', text: 'Compare ' }, image('a'), { type: 'text', text: ' with ' }, image('b')], ''),
    ],
    tools: [],
    chatTemplateKwargs: {},
  } as unknown as ChatRequest;
  const input = chatTemplateInput(chat);
  assert.deepEqual(input.messages[1]!.content, [
    { type: 'text', text: 'Compare ' },
    { type: 'image' },
    { type: 'text', text: ' with ' },
    { type: 'image' },
  ]);
  // Plain data only: nothing of the source or pixels goes to a prompt worker.
  assert.equal(JSON.stringify(input).includes('data:x'), false);
  const render = (template: string) =>
    renderChatTemplate(template, { messages: input.messages, addGenerationPrompt: true, bosToken: null, eosToken: null });
  assert.equal(
    render(QWEN2_VL_STYLE),
    '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCompare <|vision_start|><|image_pad|><|vision_end|> with ' +
      '<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n',
  );
  assert.equal(render(LLAVA_STYLE), 'SYSTEM: Be brief.\nUSER: Compare <image>\n with <image>\n\nASSISTANT:');
});

test('text edits of compaction keep parts and content together', () => {
  const image = { type: 'image' as const, source: { kind: 'url' as const, url: 'data:x' }, param: 'p' };
  const m = partsMessage('user', [image, { type: 'text', text: 'look' }], '\n');
  assert.equal(m.content, 'look');
  const after = addText(m, 'NOTE', 'after', '\n\n');
  assert.equal(after.content, 'look\n\nNOTE');
  assert.deepEqual(after.parts!.at(-1), { type: 'text', text: '\n\nNOTE' });
  const before = addText(partsMessage('user', [image], '\n'), 'NOTE', 'before', '\n\n');
  assert.equal(before.content, 'NOTE');
  assert.deepEqual(
    before.parts!.map((p) => p.type),
    ['text', 'image'],
  );
  const cut = mapText(m, (t) => t.toUpperCase());
  assert.equal(cut.content, 'LOOK');
  assert.deepEqual(cut.parts, [image, { type: 'text', text: 'LOOK' }]);
  // A message without images keeps a plain string.
  assert.equal(
    partsMessage(
      'user',
      [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
      '\n',
    ).parts,
    undefined,
  );
});
