// The one image input pipeline: every protocol's image parts (chat completions' image_url,
// Responses' input_image, Anthropic's image blocks) arrive as ChatImagePart sources in the decoded
// ChatRequest, and are loaded here the same way: a `data:` URL or base64 → bytes (data-url.ts),
// an http(s) URL → bytes (fetch.ts, guarded), bytes → DecodedImage (decode.ts). Each failure is a
// 400 naming the request field and the problem. Then the model's vision support is checked: a
// text-only model gets a 400 `no_vision_support` once its images are known to be good, so that an
// image's own problem is reported the same whichever model serves the request.
import type { FastifyBaseLogger } from 'fastify';
import type { ModelRuntime } from '../../chat/model-runtime.js';
import { imageParts, type ChatImagePart, type ChatRequest, type ImageSource } from '../../chat/request.js';
import { ApiError, invalidParam } from '../../common/api-error.js';
import type { DecodedImage } from '../../model/vision/types.js';
import { checkMediaType, decodeBase64, isDataUrl, parseDataUrl } from './data-url.js';
import { decodeImage, type ImageFormat } from './decode.js';
import { fetchImage } from './fetch.js';
import { ImageInputError } from './image-error.js';

/** The operator's image settings (flags; see DEFAULT_IMAGE_OPTIONS). */
export interface ImageOptions {
  /** --allow-private-image-urls: fetch image URLs on loopback, private and link-local addresses too. */
  allowPrivateUrls: boolean;
  /** --max-image-bytes: largest encoded image, inline or fetched. */
  maxBytes: number;
  /** --max-image-pixels: largest width × height decoded. */
  maxPixels: number;
  /** --max-images-per-request. */
  maxImages: number;
  /** --image-fetch-timeout, in seconds: one image URL's whole fetch. */
  fetchTimeoutSec: number;
}

export const DEFAULT_IMAGE_OPTIONS: ImageOptions = {
  allowPrivateUrls: false,
  maxBytes: 20 * 1024 * 1024,
  maxPixels: 32 * 1024 * 1024,
  maxImages: 16,
  fetchTimeoutSec: 10,
};

/** What one image came to. */
export interface LoadedImage {
  image: DecodedImage;
  /** Encoded size in bytes. */
  bytes: number;
  format: ImageFormat;
  /** 'data' for inline bytes, else the URL's host. */
  from: string;
}

/**
 * One image, from its source to its pixels: the whole pipeline, shared by every protocol.
 * Throws ImageInputError for the image's own problems.
 */
export async function loadImage(source: ImageSource, options: ImageOptions, signal?: AbortSignal): Promise<LoadedImage> {
  let bytes: Buffer;
  let from = 'data';
  if (source.kind === 'base64') {
    checkMediaType(source.mediaType, 'the image source');
    bytes = decodeBase64(source.data, options.maxBytes);
  } else if (isDataUrl(source.url)) {
    bytes = parseDataUrl(source.url, options.maxBytes).bytes;
  } else {
    const fetched = await fetchImage(
      source.url,
      { maxBytes: options.maxBytes, timeoutMs: options.fetchTimeoutSec * 1000, allowPrivate: options.allowPrivateUrls },
      signal,
    );
    bytes = fetched.bytes;
    from = new URL(fetched.url).host;
  }
  // The declared type only has to be an image type; the bytes' own signature picks the decoder.
  const { format, ...image } = await decodeImage(bytes, { maxPixels: options.maxPixels });
  return { image, bytes: bytes.length, format, from };
}

/** The 400 for an image part that failed. */
function imageError(part: ChatImagePart, err: ImageInputError): ApiError {
  return invalidParam(part.param, `Invalid image in '${part.param}': ${err.message}.`, err.code);
}

/** The 400 a text-only model answers an image with. */
export function noVisionSupport(modelName: string, part: ChatImagePart): ApiError {
  return invalidParam(
    part.param,
    `The model '${modelName}' has no vision support: it does not accept image input ('${part.param}' is an image).`,
    'no_vision_support',
  );
}

/**
 * The request with every image part loaded (`part.image` set), in prompt order; the request
 * itself when it has none. Images are loaded concurrently; when one fails the others are
 * cancelled, and the error of the first failing image (in request order) is thrown. Refused with
 * 400 when the request has more than --max-images-per-request images, when an image cannot be
 * loaded, and when the model has no vision support (after loading, see the top of this file).
 */
export async function loadChatImages(
  chat: ChatRequest,
  runtime: ModelRuntime,
  options: { images?: ImageOptions; modelName: string },
  log: FastifyBaseLogger,
): Promise<ChatRequest> {
  const parts = imageParts(chat.messages);
  if (parts.length === 0) return chat;
  const settings = options.images ?? DEFAULT_IMAGE_OPTIONS;
  if (parts.length > settings.maxImages) {
    throw invalidParam(
      parts[settings.maxImages]!.param,
      `The request has ${parts.length} images, over the limit of ${settings.maxImages} per request (--max-images-per-request).`,
      'too_many_images',
    );
  }
  const cancel = new AbortController();
  const results = await Promise.allSettled(
    parts.map(async (part) => {
      const started = performance.now();
      try {
        const loaded = await loadImage(part.source, settings, cancel.signal);
        const { width, height } = loaded.image;
        const ms = Math.round(performance.now() - started);
        log.debug({ param: part.param, from: loaded.from, format: loaded.format, bytes: loaded.bytes, width, height, ms }, 'image loaded');
        return loaded.image;
      } catch (err) {
        cancel.abort();
        throw err;
      }
    }),
  );
  results.forEach((r, i) => {
    if (r.status === 'rejected' && r.reason instanceof ImageInputError) throw imageError(parts[i]!, r.reason);
  });
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  if (!runtime.vision) throw noVisionSupport(options.modelName, parts[0]!);
  const images = new Map(parts.map((p, i) => [p, (results[i] as PromiseFulfilledResult<DecodedImage>).value]));
  return {
    ...chat,
    messages: chat.messages.map((m) =>
      m.parts ? { ...m, parts: m.parts.map((p) => (p.type === 'image' ? { ...p, image: images.get(p)! } : p)) } : m,
    ),
  };
}
