// Image preprocessing as transformers' (PIL-based) Qwen2VLImageProcessor does it, from the
// checkpoint's preprocessor_config.json: smart_resize picks a size near the image's own whose sides
// are whole merge windows (patch · merge pixels) and whose area lies within [min_pixels, max_pixels];
// a Pillow resize to it (bicubic), rescale and normalise (preprocess.ts does these three as the CLIP
// processors do); then the patches are cut out and flattened in the order the vision tower reads them:
// merge window by merge window, each window's patches row-major, each patch [channel][frame][y][x]
// with the still image repeated temporal_patch_size times.
import type { DecodedImage } from './types.js';
import { PIL_FILTERS, type PilFilter } from './pil-resize.js';
import { preprocessImage } from './preprocess.js';

type Json = Record<string, unknown>;

export interface Qwen2VlPreprocessing {
  /** do_resize: smart_resize within [minPixels, maxPixels]; off, the image's sides must already be whole merge windows. */
  readonly resize: boolean;
  readonly minPixels: number;
  readonly maxPixels: number;
  readonly filter: PilFilter;
  readonly patchSize: number;
  readonly mergeSize: number;
  readonly temporalPatchSize: number;
  /** Multiplies the 0 … 255 values (1/255); null: none. */
  readonly rescale: number | null;
  /** Per channel: (v − mean) / std; null: none. */
  readonly normalize: { readonly mean: readonly number[]; readonly std: readonly number[] } | null;
}

/** Qwen2VLImageProcessor's defaults. */
const DEFAULTS = {
  min_pixels: 56 * 56,
  max_pixels: 28 * 28 * 1280,
  patch_size: 14,
  merge_size: 2,
  temporal_patch_size: 2,
  resample: 3,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_std: [0.26862954, 0.26130258, 0.27577711],
};

function triple(v: unknown, where: string): number[] {
  const a = typeof v === 'number' ? [v, v, v] : v;
  if (!Array.isArray(a) || a.length !== 3 || !a.every((x) => typeof x === 'number')) throw new Error(`${where}: expected 3 numbers`);
  return a as number[];
}

/** What preprocessor_config.json (null: none) asks for. */
export function qwen2VlPreprocessing(raw: Json | null, where = 'preprocessor_config.json'): Qwen2VlPreprocessing {
  const c: Json = { ...DEFAULTS, ...(raw ?? {}) };
  const int = (key: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`${where}: ${key} is not a positive integer`);
    return v;
  };
  // Newer saves write size {shortest_edge, longest_edge} (pixel counts); min_pixels / max_pixels,
  // where given, win, as in transformers.
  const size = (c.size ?? {}) as Json;
  const minPixels = int('min_pixels', raw?.min_pixels ?? size.shortest_edge ?? DEFAULTS.min_pixels);
  const maxPixels = int('max_pixels', raw?.max_pixels ?? size.longest_edge ?? DEFAULTS.max_pixels);
  if (minPixels > maxPixels) throw new Error(`${where}: min_pixels ${minPixels} exceeds max_pixels ${maxPixels}`);
  const code = c.resample;
  const filter = (Object.keys(PIL_FILTERS) as PilFilter[]).find((f) => PIL_FILTERS[f] === code);
  if (filter === undefined)
    throw new Error(`${where}: resample ${JSON.stringify(code)} is not supported (1 lanczos, 2 bilinear, 3 bicubic)`);
  return {
    resize: c.do_resize !== false,
    minPixels,
    maxPixels,
    filter,
    patchSize: int('patch_size', c.patch_size),
    mergeSize: int('merge_size', c.merge_size),
    temporalPatchSize: int('temporal_patch_size', c.temporal_patch_size),
    rescale: c.do_rescale === false ? null : typeof c.rescale_factor === 'number' ? c.rescale_factor : 1 / 255,
    normalize:
      c.do_normalize === false
        ? null
        : { mean: triple(c.image_mean, `${where}: image_mean`), std: triple(c.image_std, `${where}: image_std`) },
  };
}

/** Python's round() of a float: halves go to the even neighbour. */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

/**
 * transformers' smart_resize: each side rounded to a multiple of `factor`; when that area exceeds
 * maxPixels both sides are scaled down by √(area / maxPixels) and floored to multiples (at least one
 * factor), when it falls short of minPixels scaled up by √(minPixels / area) and ceiled. Operations in
 * Python's order, so the doubles round alike. An aspect ratio beyond 200 is refused, as there.
 */
export function smartResize(
  height: number,
  width: number,
  factor: number,
  minPixels: number,
  maxPixels: number,
): { height: number; width: number } {
  if (!(Number.isInteger(height) && Number.isInteger(width) && height > 0 && width > 0)) {
    throw new RangeError(`image size ${width}×${height} is not positive whole pixels`);
  }
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new RangeError(`a ${width}×${height} image's aspect ratio exceeds 200, which Qwen2-VL's processor refuses`);
  }
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  if (h < factor || w < factor)
    throw new RangeError(`a ${width}×${height} image resizes to ${w}×${h}, less than one ${factor}-pixel window`);
  return { height: h, width: w };
}

/** A preprocessed image: its flattened patches and patch grid (unmerged; t = 1 for a still image). */
export interface Qwen2VlPatches {
  /** [gridH · gridW, channels · temporalPatchSize · patch²], the processor's pixel_values for this image. */
  readonly patches: Float32Array;
  readonly gridH: number;
  readonly gridW: number;
}

/**
 * The processor's patch flattening of one still image `pixels` [channels, height, width]: it is
 * repeated temporalPatchSize times and reshaped [t, tp, C, h/merge, merge, patch, w/merge, merge,
 * patch] → transposed (0, 3, 6, 4, 7, 2, 1, 5, 8) → [t·h·w patches, C·tp·patch²]. So patch rows go
 * merge window by merge window (row-major over the windows), row-major within a window, and each
 * row holds channel, frame, y, x in that order.
 */
export function flattenPatches(
  pixels: Float32Array,
  channels: number,
  height: number,
  width: number,
  patch: number,
  merge: number,
  temporalPatchSize: number,
): Qwen2VlPatches {
  const unit = patch * merge;
  if (height % unit !== 0 || width % unit !== 0)
    throw new RangeError(`${width}×${height} pixels are not whole ${unit}-pixel merge windows`);
  if (pixels.length !== channels * height * width)
    throw new RangeError(`${pixels.length} pixel values, expected ${channels}×${height}×${width}`);
  const gridH = height / patch;
  const gridW = width / patch;
  const cols = channels * temporalPatchSize * patch * patch;
  const patches = new Float32Array(gridH * gridW * cols);
  let o = 0;
  for (let bh = 0; bh < gridH / merge; bh++)
    for (let bw = 0; bw < gridW / merge; bw++)
      for (let mh = 0; mh < merge; mh++)
        for (let mw = 0; mw < merge; mw++) {
          const top = (bh * merge + mh) * patch;
          const left = (bw * merge + mw) * patch;
          for (let ch = 0; ch < channels; ch++)
            // Every frame is the same picture.
            for (let t = 0; t < temporalPatchSize; t++)
              for (let y = 0; y < patch; y++) {
                const src = (ch * height + top + y) * width + left;
                patches.set(pixels.subarray(src, src + patch), o);
                o += patch;
              }
        }
  return { patches, gridH, gridW };
}

/** `image` as the tower's input: smart_resize, Pillow resize, rescale, normalise, flatten. */
export function preprocessQwen2Vl(image: DecodedImage, p: Qwen2VlPreprocessing): Qwen2VlPatches {
  const unit = p.patchSize * p.mergeSize;
  const size = p.resize
    ? smartResize(image.height, image.width, unit, p.minPixels, p.maxPixels)
    : { height: image.height, width: image.width };
  const pixels = preprocessImage(image, { resize: size, filter: p.filter, crop: null, rescale: p.rescale, normalize: p.normalize });
  return flattenPatches(pixels, 3, size.height, size.width, p.patchSize, p.mergeSize, p.temporalPatchSize);
}
