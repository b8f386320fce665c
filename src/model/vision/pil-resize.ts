// Image resizing as Pillow's Image.resize does it for 8-bit RGB (libImaging/Resample.c), which is
// what transformers' image processors call (resample = a PIL filter code): a separable convolution,
// horizontal pass first, whose kernel is widened by the scale factor when shrinking (antialiasing);
// coefficients normalised per output pixel, turned into 22-bit fixed point, and each pass rounded and
// clamped to 8 bits. Reproducing it bit for bit keeps svc's pixels the ones the model was fed in
// training; it is written here rather than taken from an image library (sharp / libvips), whose
// bicubic kernel and rounding differ from Pillow's.

/** Pillow's filter codes (Image.Resampling) this implements. */
export const PIL_FILTERS = { lanczos: 1, bilinear: 2, bicubic: 3 } as const;
export type PilFilter = keyof typeof PIL_FILTERS;

interface Filter {
  readonly support: number;
  readonly weight: (x: number) => number;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

const FILTERS: Record<PilFilter, Filter> = {
  bilinear: { support: 1, weight: (x) => Math.max(0, 1 - Math.abs(x)) },
  // Keys' cubic with a = -0.5, as Pillow.
  bicubic: {
    support: 2,
    weight: (x) => {
      const a = -0.5;
      const t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
      return 0;
    },
  },
  lanczos: { support: 3, weight: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
};

const PRECISION_BITS = 32 - 8 - 2;

/** Per output pixel: first input pixel, tap count, and ksize fixed-point coefficients. */
interface Coefficients {
  readonly ksize: number;
  readonly first: Int32Array;
  readonly count: Int32Array;
  readonly k: Int32Array;
}

// Pillow's precompute_coeffs + normalize_coeffs_8bpc.
function coefficients(inSize: number, outSize: number, filter: Filter): Coefficients {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const k = new Int32Array(outSize * ksize);
  const pre = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    // C's (int) truncates toward zero; both bounds are clamped right after.
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    const ss = 1 / filterScale;
    let total = 0;
    for (let x = 0; x < xmax; x++) {
      pre[x] = filter.weight((x + xmin - center + 0.5) * ss);
      total += pre[x];
    }
    for (let x = 0; x < xmax; x++) {
      const w = total !== 0 ? pre[x] / total : pre[x];
      const fixed = w * (1 << PRECISION_BITS);
      k[xx * ksize + x] = Math.trunc(w < 0 ? fixed - 0.5 : fixed + 0.5);
    }
    first[xx] = xmin;
    count[xx] = xmax;
  }
  return { ksize, first, count, k };
}

/** Rounds a fixed-point sum (it starts at half a unit) to 0 … 255, as Pillow's clip8. */
function clip8(ss: number): number {
  const v = ss >> PRECISION_BITS;
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/** One pass along x (horizontal) or y, of an RGB image [height][width][3]. */
function pass(src: Uint8Array, width: number, height: number, outSize: number, horizontal: boolean, filter: Filter): Uint8Array {
  const inSize = horizontal ? width : height;
  const c = coefficients(inSize, outSize, filter);
  const outW = horizontal ? outSize : width;
  const outH = horizontal ? height : outSize;
  const out = new Uint8Array(outW * outH * 3);
  const step = horizontal ? 3 : width * 3; // bytes between neighbours along the pass
  for (let y = 0; y < outH; y++)
    for (let x = 0; x < outW; x++) {
      const o = horizontal ? x : y;
      const base = horizontal ? (y * width + c.first[o]) * 3 : (c.first[o] * width + x) * 3;
      const kOff = o * c.ksize;
      let s0 = 1 << (PRECISION_BITS - 1),
        s1 = s0,
        s2 = s0;
      for (let t = 0; t < c.count[o]; t++) {
        const kk = c.k[kOff + t];
        const p = base + t * step;
        s0 += src[p] * kk;
        s1 += src[p + 1] * kk;
        s2 += src[p + 2] * kk;
      }
      const d = (y * outW + x) * 3;
      out[d] = clip8(s0);
      out[d + 1] = clip8(s1);
      out[d + 2] = clip8(s2);
    }
  return out;
}

/** `rgb` [height][width][3] resized to outWidth × outHeight with Pillow's `filter`. */
export function pilResize(
  rgb: Uint8Array,
  width: number,
  height: number,
  outWidth: number,
  outHeight: number,
  filter: PilFilter,
): Uint8Array {
  const f = FILTERS[filter];
  let img = rgb;
  if (outWidth !== width) img = pass(img, width, height, outWidth, true, f);
  if (outHeight !== height) img = pass(img, outWidth, height, outHeight, false, f);
  return img === rgb ? rgb.slice() : img;
}
