// Image preprocessing as transformers' (PIL-based) SiglipImageProcessor / CLIPImageProcessor do it,
// from the checkpoint's preprocessor_config.json: resize (to a fixed size, or the shortest edge to a
// size keeping the aspect ratio) with the configured Pillow filter, center crop, rescale (1/255) and
// normalise with image_mean / image_std, into [3, height, width] floats (pixel_values). Without a
// preprocessor_config.json the tower family's processor defaults apply.
import type { DecodedImage } from './types.js';
import type { VisionTowerConfig } from './vision-config.js';
import { PIL_FILTERS, pilResize, type PilFilter } from './pil-resize.js';

type Json = Record<string, unknown>;

export interface ImagePreprocessing {
  /** Resize to exactly this size, or the shortest edge to `shortestEdge` (the other keeps the aspect ratio); null: none. */
  readonly resize: { readonly height: number; readonly width: number } | { readonly shortestEdge: number } | null;
  readonly filter: PilFilter;
  /** Center crop to this size (zero padding where the image is smaller); null: none. */
  readonly crop: { readonly height: number; readonly width: number } | null;
  /** Multiplies the 0 … 255 values (1/255); null: none. */
  readonly rescale: number | null;
  /** Per channel: (v − mean) / std; null: none. */
  readonly normalize: { readonly mean: readonly number[]; readonly std: readonly number[] } | null;
}

const OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
const OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711];

/** The processor defaults of a tower family, at its image size (SiglipImageProcessor / CLIPImageProcessor). */
function defaults(tower: VisionTowerConfig): Json {
  const s = tower.imageSize;
  return tower.family === 'siglip'
    ? { size: { height: s, width: s }, resample: 3, do_center_crop: false, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }
    : {
        size: { shortest_edge: s },
        resample: 3,
        do_center_crop: true,
        crop_size: { height: s, width: s },
        image_mean: OPENAI_CLIP_MEAN,
        image_std: OPENAI_CLIP_STD,
      };
}

function size(v: unknown, where: string): { height: number; width: number } {
  if (typeof v === 'number') return { height: v, width: v };
  const o = (v ?? {}) as Json;
  if (typeof o.height === 'number' && typeof o.width === 'number') return { height: o.height, width: o.width };
  throw new Error(`${where}: expected {height, width}, got ${JSON.stringify(v)}`);
}

function triple(v: unknown, where: string): number[] {
  const a = typeof v === 'number' ? [v, v, v] : v;
  if (!Array.isArray(a) || a.length !== 3 || !a.every((x) => typeof x === 'number')) throw new Error(`${where}: expected 3 numbers`);
  return a as number[];
}

/** What preprocessor_config.json (null: none) asks for, checked to give the tower's input size. */
export function imagePreprocessing(raw: Json | null, tower: VisionTowerConfig, where = 'preprocessor_config.json'): ImagePreprocessing {
  const c = { ...defaults(tower), ...(raw ?? {}) };
  const code = c.resample ?? 3;
  const filter = (Object.keys(PIL_FILTERS) as PilFilter[]).find((f) => PIL_FILTERS[f] === code);
  if (filter === undefined)
    throw new Error(`${where}: resample ${JSON.stringify(code)} is not supported (1 lanczos, 2 bilinear, 3 bicubic)`);
  let resize: ImagePreprocessing['resize'] = null;
  if (c.do_resize !== false) {
    const s = c.size as Json | number;
    // A bare number is the shortest edge when a crop follows (CLIP's old configs), else both sides.
    if (typeof s === 'object' && s !== null && typeof s.shortest_edge === 'number') resize = { shortestEdge: s.shortest_edge };
    else if (typeof s === 'number' && c.do_center_crop === true) resize = { shortestEdge: s };
    else resize = size(s, `${where}: size`);
  }
  const crop = c.do_center_crop === true ? size(c.crop_size, `${where}: crop_size`) : null;
  const rescale = c.do_rescale === false ? null : typeof c.rescale_factor === 'number' ? c.rescale_factor : 1 / 255;
  const normalize =
    c.do_normalize === false
      ? null
      : { mean: triple(c.image_mean, `${where}: image_mean`), std: triple(c.image_std, `${where}: image_std`) };
  const p: ImagePreprocessing = { resize, filter, crop, rescale, normalize };
  // Only a fixed output size can feed the tower's learned positions.
  const out = crop ?? (resize && 'height' in resize ? resize : null);
  if (!out || out.height !== tower.imageSize || out.width !== tower.imageSize) {
    throw new Error(`${where}: images would not come out ${tower.imageSize}×${tower.imageSize}, the vision tower's input size`);
  }
  return p;
}

/** transformers' get_resize_output_image_size for a shortest edge: the long side scaled and truncated. */
function shortestEdgeSize(width: number, height: number, edge: number): { width: number; height: number } {
  if (width <= height) return { width: edge, height: Math.trunc((edge * height) / width) };
  return { width: Math.trunc((edge * width) / height), height: edge };
}

/** `image` as the tower's pixel_values: [3, height, width] floats, channel-major. */
export function preprocessImage(image: DecodedImage, p: ImagePreprocessing): Float32Array {
  let { width, height, rgb } = image;
  if (rgb.length !== width * height * 3) throw new RangeError(`image: ${rgb.length} bytes for ${width}×${height} RGB`);
  if (p.resize) {
    const to = 'shortestEdge' in p.resize ? shortestEdgeSize(width, height, p.resize.shortestEdge) : p.resize;
    if (to.width !== width || to.height !== height) rgb = pilResize(rgb, width, height, to.width, to.height, p.filter);
    ({ width, height } = to);
  }
  // Center crop: top-left at (size − crop) // 2, as transformers' center_crop (floor division, so
  // a larger crop than the image starts at a negative offset and is padded with zeros).
  const outH = p.crop?.height ?? height;
  const outW = p.crop?.width ?? width;
  const top = Math.floor((height - outH) / 2);
  const left = Math.floor((width - outW) / 2);
  const out = new Float32Array(3 * outH * outW);
  // transformers rescales in f64 then stores f32, and normalises in f32 (mean and std as f32 too).
  const scale = p.rescale ?? 1;
  for (let ch = 0; ch < 3; ch++) {
    const mean = Math.fround(p.normalize?.mean[ch] ?? 0);
    const std = Math.fround(p.normalize?.std[ch] ?? 1);
    for (let y = 0; y < outH; y++)
      for (let x = 0; x < outW; x++) {
        const sy = y + top,
          sx = x + left;
        const v = sy >= 0 && sy < height && sx >= 0 && sx < width ? rgb[(sy * width + sx) * 3 + ch] : 0;
        out[(ch * outH + y) * outW + x] = Math.fround(Math.fround(v * scale) - mean) / std;
      }
  }
  return out;
}
