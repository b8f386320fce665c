// Image bytes given inline: a `data:<media type>;base64,<data>` URL (chat completions, Responses)
// or base64 with a declared media type (Anthropic's `base64` source). The base64 is checked
// strictly (Buffer.from would skip bad characters and decode the rest) and its decoded size is
// bounded before anything is decoded.
import { IMAGE_MEDIA_TYPES, ImageInputError, normalizeMediaType, supportedTypesText } from './image-error.js';

/** The standard alphabet, padding only at the end. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes that `data` decodes to (its length says so without decoding it). */
export function base64Size(data: string): number {
  let pad = 0;
  if (data.endsWith('==')) pad = 2;
  else if (data.endsWith('=')) pad = 1;
  return Math.floor(((data.length - pad) * 3) / 4);
}

/** `data` decoded; refused when it is not valid base64 or decodes to more than `maxBytes`. */
export function decodeBase64(data: string, maxBytes: number): Buffer {
  // Padding is optional; a length of 4k + 1 cannot be base64 either way.
  const padded = data.endsWith('=');
  if (data.length === 0) throw new ImageInputError('invalid_image', 'the image data is empty');
  if (!BASE64.test(data) || (padded ? data.length % 4 !== 0 : data.length % 4 === 1)) {
    throw new ImageInputError(
      'invalid_image',
      'the image data is not valid base64 (the standard alphabet A-Z a-z 0-9 + /, with = padding only at the end; no whitespace)',
    );
  }
  const size = base64Size(data);
  if (size > maxBytes) throw tooManyBytes(size, maxBytes);
  return Buffer.from(data, 'base64');
}

export function tooManyBytes(size: number, maxBytes: number): ImageInputError {
  return new ImageInputError('image_too_large', `the image is ${size} bytes, over the limit of ${maxBytes} bytes (--max-image-bytes)`);
}

/** A declared media type, refused unless it is one svc decodes. */
export function checkMediaType(raw: string, what: string): string {
  const type = normalizeMediaType(raw);
  if (type === '') throw new ImageInputError('invalid_image', `${what} names no media type (send one of ${supportedTypesText()})`);
  if (!IMAGE_MEDIA_TYPES.includes(type)) {
    throw new ImageInputError('invalid_image', `${what} has media type '${type}', which is not one svc decodes (${supportedTypesText()})`);
  }
  return type;
}

export function isDataUrl(url: string): boolean {
  return /^data:/i.test(url);
}

/** A `data:` URL's media type and bytes: `data:image/png;base64,iVBOR…` (parameters before `;base64` are allowed). */
export function parseDataUrl(url: string, maxBytes: number): { mediaType: string; bytes: Buffer } {
  const comma = url.indexOf(',');
  if (comma < 0) throw new ImageInputError('invalid_image', "the data: URL has no ',' before its data");
  const header = url.slice('data:'.length, comma).split(';');
  if (header.length < 2 || header[header.length - 1]!.trim().toLowerCase() !== 'base64') {
    throw new ImageInputError('invalid_image', 'the data: URL is not base64 (only data:<media type>;base64,<data> is accepted)');
  }
  const mediaType = checkMediaType(header[0]!, 'the data: URL');
  return { mediaType, bytes: decodeBase64(url.slice(comma + 1), maxBytes) };
}
