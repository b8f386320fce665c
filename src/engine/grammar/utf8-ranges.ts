// Code-point ranges as UTF-8 byte-range sequences (as Rust's utf8-ranges crate): every code point
// in [lo, hi] is matched by exactly one of the sequences, and each sequence is a list of byte
// ranges, one per byte of the encoding. Surrogates (U+D800..U+DFFF) have no UTF-8 form and are left
// out.

/** One byte range [lo, hi] per byte of the encoding. */
export type ByteSeq = [lo: number, hi: number][];

export const MAX_CODE_POINT = 0x10ffff;
const LENGTH_ENDS = [0x7f, 0x7ff, 0xffff, MAX_CODE_POINT];

/** The byte-range sequences that match exactly the code points lo..hi (surrogates excluded). */
export function utf8Sequences(lo: number, hi: number): ByteSeq[] {
  const out: ByteSeq[] = [];
  const todo: [number, number][] = [];
  // Surrogates split the range; encoded lengths split it further.
  if (lo < 0xd800 && hi > 0xdfff) todo.push([lo, 0xd7ff], [0xe000, hi]);
  else if (lo >= 0xd800 && lo <= 0xdfff) todo.push([0xe000, hi]);
  else if (hi >= 0xd800 && hi <= 0xdfff) todo.push([lo, 0xd7ff]);
  else todo.push([lo, hi]);
  while (todo.length > 0) {
    const [a, b] = todo.shift()!;
    if (a > b) continue;
    const split = splitRange(a, b);
    if (split) {
      todo.unshift(...split);
      continue;
    }
    const ea = encode(a);
    const eb = encode(b);
    out.push(ea.map((x, i) => [x, eb[i]]));
  }
  return out;
}

/** Where [a, b] must be cut so that every byte position of the encoding is a plain range; null when it need not be. */
function splitRange(a: number, b: number): [number, number][] | null {
  for (const end of LENGTH_ENDS) {
    if (a <= end && b > end)
      return [
        [a, end],
        [end + 1, b],
      ];
  }
  if (a <= 0x7f) return null;
  const n = encodedLength(a);
  for (let i = 1; i < n; i++) {
    const m = (1 << (6 * i)) - 1;
    if ((a & ~m) !== (b & ~m)) {
      if ((a & m) !== 0)
        return [
          [a, a | m],
          [(a | m) + 1, b],
        ];
      if ((b & m) !== m)
        return [
          [a, (b & ~m) - 1],
          [b & ~m, b],
        ];
    }
  }
  return null;
}

function encodedLength(c: number): number {
  return c <= 0x7f ? 1 : c <= 0x7ff ? 2 : c <= 0xffff ? 3 : 4;
}

/** The UTF-8 bytes of code point c. */
export function encode(c: number): number[] {
  if (c <= 0x7f) return [c];
  if (c <= 0x7ff) return [0xc0 | (c >> 6), 0x80 | (c & 0x3f)];
  if (c <= 0xffff) return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
  return [0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
}
