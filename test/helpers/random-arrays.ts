// Seeded random numbers and arrays for kernel tests (mulberry32): the same inputs on every run.

/** Uniform in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `len` values uniform in [-amp, amp). */
export function randomF32(rand: () => number, len: number, amp = 1): Float32Array {
  const a = new Float32Array(len);
  for (let i = 0; i < len; i++) a[i] = (rand() * 2 - 1) * amp;
  return a;
}

export function maxAbs(a: Float32Array): number {
  let m = 0;
  for (const v of a) m = Math.max(m, Math.abs(v));
  return m;
}
