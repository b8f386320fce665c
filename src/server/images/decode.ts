// Image bytes → DecodedImage (8-bit RGB, height × width × 3) with sharp (libvips), on libuv's
// thread pool, never on the event loop. Only JPEG, PNG, WebP and GIF are decoded: the format is
// told from the bytes' signature before sharp sees them, so none of libvips' other loaders (SVG,
// TIFF, PDF, HEIF …) is ever reached. The size in pixels is read from the header and checked
// before the pixels are decoded (a small file can claim a huge picture), and sharp's own pixel
// limit is set to the same cap. As transformers' load_image does, the EXIF orientation is applied;
// transparency is composited onto white (vLLM's RGBA → RGB); a GIF or animated WebP gives its
// first frame; any colour space (grey, CMYK, 16-bit) becomes 8-bit sRGB.
// sharp (libvips) is loaded on the first image, not at start-up: a server that never sees one
// never maps libvips, whose allocations otherwise made the process's RSS creep across model swaps.
import type { Metadata, OutputInfo, SharpOptions } from 'sharp';
import type { DecodedImage } from '../../model/vision/types.js';
import { ImageInputError } from './image-error.js';

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'gif';

type Sharp = (typeof import('sharp'))['default'];
let loading: Promise<Sharp> | null = null;

/** sharp, configured once. */
function loadSharp(): Promise<Sharp> {
  loading ??= import('sharp').then(({ default: sharp }) => {
    // Each input is decoded once: nothing to gain from libvips' operation cache.
    sharp.cache(false);
    // Defence in depth behind the signature check: libvips may load these four formats and no other.
    sharp.block({ operation: ['VipsForeignLoad'] });
    sharp.unblock({ operation: ['VipsForeignLoadJpeg', 'VipsForeignLoadPng', 'VipsForeignLoadWebp', 'VipsForeignLoadNsgif'] });
    return sharp;
  });
  return loading;
}

/** The format a file's first bytes announce, or null when it is none of the four. */
export function sniffFormat(bytes: Uint8Array): ImageFormat | null {
  const at = (offset: number, ascii: string): boolean =>
    bytes.length >= offset + ascii.length && [...ascii].every((c, i) => bytes[offset + i] === c.charCodeAt(0));
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes[0] === 0x89 && at(1, 'PNG\r\n\x1a\n')) return 'png';
  if (at(0, 'GIF87a') || at(0, 'GIF89a')) return 'gif';
  if (at(0, 'RIFF') && at(8, 'WEBP')) return 'webp';
  return null;
}

export interface DecodeLimits {
  /** Largest width × height decoded (--max-image-pixels). */
  maxPixels: number;
}

/** The picture `bytes` hold, with the format they were in. */
export async function decodeImage(bytes: Uint8Array, limits: DecodeLimits): Promise<DecodedImage & { format: ImageFormat }> {
  const format = sniffFormat(bytes);
  if (format === null) throw new ImageInputError('invalid_image', 'the data is not a JPEG, PNG, WebP or GIF image');
  const sharp = await loadSharp();
  const options: SharpOptions = { limitInputPixels: limits.maxPixels, failOn: 'error', pages: 1 };
  let meta: Metadata;
  try {
    // The header only: its size is checked below, with a clearer message than sharp's limit gives.
    meta = await sharp(bytes, { ...options, limitInputPixels: false }).metadata();
  } catch (err) {
    throw undecodable(format, err);
  }
  const { width, height } = meta;
  if (!width || !height) throw new ImageInputError('invalid_image', `the ${format.toUpperCase()} image has no size in its header`);
  if (width * height > limits.maxPixels) {
    throw new ImageInputError(
      'image_too_large',
      `the image is ${width}x${height} = ${width * height} pixels, over the limit of ${limits.maxPixels} pixels (--max-image-pixels)`,
    );
  }
  let out: { data: Buffer; info: OutputInfo };
  try {
    out = await sharp(bytes, options)
      .autoOrient()
      .flatten({ background: { r: 255, g: 255, b: 255 } })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw undecodable(format, err);
  }
  const { info, data } = out;
  if (info.channels !== 3 || data.length !== info.width * info.height * 3) {
    throw new ImageInputError('invalid_image', `the ${format.toUpperCase()} image did not decode to RGB (${info.channels} channels)`);
  }
  return { width: info.width, height: info.height, rgb: new Uint8Array(data.buffer, data.byteOffset, data.length), format };
}

/** libvips' reason, first line only (it names the loader and the fault: "VipsJpeg: Premature end of input file"). */
function undecodable(format: ImageFormat, err: unknown): ImageInputError {
  const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
  return new ImageInputError('invalid_image', `the ${format.toUpperCase()} image could not be decoded (corrupt or truncated: ${reason})`);
}
