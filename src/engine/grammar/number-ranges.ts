// Bounded JSON numbers as regexes (compiled by regex.ts): the texts of exactly the numbers within
// the bounds, digit by digit (as to-regex-range does for integers; fractions are compared digit
// by digit too, so decimal bounds such as 0.5 or 99.99 are exact). The texts have no exponent,
// no `-0`, at most MAX_DIGITS integer digits and at most MAX_DIGITS fraction digits (as the
// unbounded number node), so a bound past 10^16 is as good as none.

/** Integer and fraction digits a bounded number may have. */
export const MAX_DIGITS = 16;

/** A decimal: integer part and fraction digits (no trailing zeros). */
interface Dec {
  int: bigint;
  frac: string;
}

export interface NumberBounds {
  integer: boolean;
  /** null: unbounded on that side. */
  min: number | null;
  max: number | null;
  exclusiveMin: boolean;
  exclusiveMax: boolean;
}

/** A regex for the numbers within `b`; null when there are none. */
export function numberRangeRegex(b: NumberBounds): string | null {
  const alts: string[] = [];
  if (b.integer) {
    const lo = b.min === null ? null : intBound(b.min, b.exclusiveMin, 'up');
    const hi = b.max === null ? null : intBound(b.max, b.exclusiveMax, 'down');
    if (lo !== null && hi !== null && lo > hi) return null;
    // Negative numbers: `-` and a magnitude in [max(1, -hi), -lo].
    if (lo === null || lo < 0n) {
      const from = hi === null || hi >= 0n ? 1n : -hi;
      const mags = intRange(from, lo === null ? null : -lo);
      if (mags) alts.push(`-(?:${mags})`);
    }
    if (hi === null || hi >= 0n) {
      const r = intRange(lo === null || lo < 0n ? 0n : lo, hi);
      if (r) alts.push(r);
    }
  } else {
    const lo = b.min === null ? null : decimal(b.min);
    const hi = b.max === null ? null : decimal(b.max);
    // Non-negative part: [max(lo, 0), hi].
    if (hi === null || !hi.neg) {
      const fromZero = lo === null || lo.neg;
      const r = decRange(fromZero ? ZERO : lo, fromZero ? false : b.exclusiveMin, hi, b.exclusiveMax);
      if (r) alts.push(r);
    }
    // Negative part: `-` and a magnitude in (max(0, -hi), -lo], or from -hi when hi < 0.
    if (lo === null || lo.neg) {
      const hiNeg = hi !== null && hi.neg;
      const r = decRange(hiNeg ? hi : ZERO, hiNeg ? b.exclusiveMax : true, lo, b.exclusiveMin);
      if (r) alts.push(`-(?:${r})`);
    }
  }
  return alts.length === 0 ? null : alts.join('|');
}

const ZERO: Dec = { int: 0n, frac: '' };

/** The integer bound of a (possibly fractional) bound, rounded inward. */
function intBound(v: number, exclusive: boolean, dir: 'up' | 'down'): bigint {
  if (Number.isInteger(v)) return BigInt(v) + (exclusive ? (dir === 'up' ? 1n : -1n) : 0n);
  return BigInt(dir === 'up' ? Math.ceil(v) : Math.floor(v));
}

/** |v| as a decimal, and its sign. */
function decimal(v: number): Dec & { neg: boolean } {
  if (!Number.isFinite(v)) throw new RangeError(`not a finite number: ${v}`);
  const [mant, expPart] = Math.abs(v).toString().split('e');
  const exp = expPart === undefined ? 0 : Number(expPart);
  let [i, f = ''] = mant.split('.');
  // Shift the decimal point by the exponent.
  if (exp > 0) {
    f = f.padEnd(exp, '0');
    i += f.slice(0, exp);
    f = f.slice(exp);
  } else if (exp < 0) {
    i = i.padStart(-exp + 1, '0');
    f = i.slice(i.length + exp) + f;
    i = i.slice(0, i.length + exp);
  }
  return { int: BigInt(i || '0'), frac: f.replace(/0+$/, ''), neg: v < 0 };
}

/** Non-negative integers lo..hi (hi null: unbounded) as regex alternatives; null when empty. */
function intRange(lo: bigint, hi: bigint | null): string | null {
  const maxValue = 10n ** BigInt(MAX_DIGITS) - 1n;
  const top = hi === null || hi > maxValue ? maxValue : hi;
  if (lo > top) return null;
  const alts: string[] = [];
  const loLen = lo.toString().length;
  const topLen = top.toString().length;
  for (let len = loLen; len <= topLen; len++) {
    const from = len === loLen ? lo : 10n ** BigInt(len - 1);
    const to = len === topLen ? top : 10n ** BigInt(len) - 1n;
    // Every number of this length and the longer ones (an unbounded range): one alternative.
    if (hi === null && from === 10n ** BigInt(len - 1) && len > 1) {
      alts.push(`[1-9]\\d{${len - 1},${MAX_DIGITS - 1}}`);
      break;
    }
    alts.push(sameLength(from.toString(), to.toString()));
  }
  return alts.join('|');
}

/** Digit strings of one length between lo and hi (lo <= hi). */
function sameLength(lo: string, hi: string): string {
  if (lo === hi) return lo;
  const k = lo.length - 1;
  if (lo[0] === hi[0]) return `${lo[0]}(?:${sameLength(lo.slice(1), hi.slice(1))})`;
  const parts: string[] = [];
  let first = Number(lo[0]);
  let last = Number(hi[0]);
  if (k > 0 && !/^0*$/.test(lo.slice(1))) {
    parts.push(`${lo[0]}(?:${sameLength(lo.slice(1), '9'.repeat(k))})`);
    first++;
  }
  let upper: string | null = null;
  if (k > 0 && !/^9*$/.test(hi.slice(1))) {
    upper = `${hi[0]}(?:${sameLength('0'.repeat(k), hi.slice(1))})`;
    last--;
  }
  if (first <= last) parts.push(`${digits(first, last)}${k > 0 ? `\\d{${k}}` : ''}`);
  if (upper) parts.push(upper);
  return parts.join('|');
}

function digits(a: number, b: number): string {
  return a === b ? String(a) : `[${a}-${b}]`;
}

/** Non-negative decimals between lo and hi (hi null: unbounded), no exponent; null when empty. */
function decRange(lo: Dec, loEx: boolean, hi: Dec | null, hiEx: boolean): string | null {
  if (hi !== null && (compare(lo, hi) > 0 || (compare(lo, hi) === 0 && (loEx || hiEx)))) return null;
  const budget = Math.max(MAX_DIGITS, lo.frac.length + 1, (hi?.frac.length ?? 0) + 1);
  const alts: string[] = [];
  const add = (int: bigint | string, t: Tail) => {
    const f = fraction(t);
    if (f !== null) alts.push(`${int}${f}`);
  };
  if (hi !== null && lo.int === hi.int) {
    // One integer part: the fraction between both bounds.
    add(lo.int, between(lo.frac, loEx, hi.frac, hiEx, budget));
  } else {
    add(lo.int, atLeast(lo.frac, loEx, budget));
    const middle = intRange(lo.int + 1n, hi === null ? null : hi.int - 1n);
    if (middle !== null) add(`(?:${middle})`, atLeast('', false, budget));
    if (hi !== null) add(hi.int, atMost(hi.frac, hiEx, budget));
  }
  return alts.length === 0 ? null : alts.join('|');
}

function compare(a: Dec, b: Dec): number {
  if (a.int !== b.int) return a.int < b.int ? -1 : 1;
  const n = Math.max(a.frac.length, b.frac.length);
  const x = a.frac.padEnd(n, '0');
  const y = b.frac.padEnd(n, '0');
  return x === y ? 0 : x < y ? -1 : 1;
}

// Fractions: the digit strings s after an integer part's `.`, compared as values .s with a bound's
// fraction digits g (no trailing zeros; '' is zero). A Tail is the non-empty strings that qualify
// (ne, a regex; null: none) and whether the empty one (no fraction at all, value 0) does. Budgets
// keep fractions to about MAX_DIGITS digits.

interface Tail {
  ne: string | null;
  empty: boolean;
}

/** The text after an integer part: `.s` for the tail's strings, or nothing where the empty one qualifies. */
function fraction(t: Tail): string | null {
  if (t.ne === null) return t.empty ? '' : null;
  return t.empty ? `(?:\\.(?:${t.ne}))?` : `\\.(?:${t.ne})`;
}

/** d followed by the tail's strings. */
function prefixed(d: number, t: Tail): string | null {
  if (t.ne === null) return t.empty ? String(d) : null;
  return t.empty ? `${d}(?:${t.ne})?` : `${d}(?:${t.ne})`;
}

/** .s >= .g (> when ex). */
function atLeast(g: string, ex: boolean, budget: number): Tail {
  if (g === '') return ex ? { ne: positive(budget), empty: false } : { ne: `\\d{1,${budget}}`, empty: true };
  return { ne: ex ? gt(g, budget) : geq(g, budget), empty: false };
}

/** .s <= .g (< when ex). */
function atMost(g: string, ex: boolean, budget: number): Tail {
  if (g === '') return ex ? { ne: null, empty: false } : { ne: `0{1,${budget}}`, empty: true };
  return { ne: ex ? lt(g, budget) : leq(g, budget), empty: true };
}

/** .lo < or <= .s < or <= .hi. */
function between(lo: string, loEx: boolean, hi: string, hiEx: boolean, budget: number): Tail {
  if (hi === '') return lo === '' && !loEx && !hiEx ? { ne: `0{1,${budget}}`, empty: true } : { ne: null, empty: false };
  if (lo === '' && !loEx) return atMost(hi, hiEx, budget);
  if (budget <= 0) return { ne: null, empty: false };
  // s is non-empty from here (its value is above zero): split on its first digit.
  const l = lo === '' ? 0 : Number(lo[0]);
  const h = Number(hi[0]);
  const alts: (string | null)[] = [];
  if (l === h) {
    alts.push(prefixed(l, between(lo.slice(1), loEx, hi.slice(1), hiEx, budget - 1)));
  } else {
    alts.push(prefixed(l, atLeast(lo.slice(1), loEx, budget - 1)));
    if (l + 1 <= h - 1) alts.push(`${digits(l + 1, h - 1)}\\d{0,${budget - 1}}`);
    alts.push(prefixed(h, atMost(hi.slice(1), hiEx, budget - 1)));
  }
  const ne = alts.filter((a): a is string => a !== null);
  return { ne: ne.length === 0 ? null : ne.join('|'), empty: false };
}

/** Non-empty digit strings with a non-zero digit (.s > 0). */
function positive(budget: number): string {
  return `0{0,${budget - 1}}[1-9]\\d{0,${budget - 1}}`;
}

/** Non-empty digit strings s with .s >= .g (g non-empty). */
function geq(g: string, budget: number): string {
  const d = Number(g[0]);
  const rest = g.slice(1);
  const alts: string[] = [];
  if (d < 9) alts.push(`${digits(d + 1, 9)}\\d{0,${budget - 1}}`);
  alts.push(rest === '' ? `${d}\\d{0,${budget - 1}}` : `${d}(?:${geq(rest, budget - 1)})`);
  return alts.join('|');
}

/** Non-empty digit strings s with .s > .g. */
function gt(g: string, budget: number): string {
  if (g === '') return positive(budget);
  const d = Number(g[0]);
  const alts: string[] = [];
  if (d < 9) alts.push(`${digits(d + 1, 9)}\\d{0,${budget - 1}}`);
  alts.push(`${d}(?:${gt(g.slice(1), budget - 1)})`);
  return alts.join('|');
}

/** Non-empty digit strings s with .s <= .g (g non-empty). */
function leq(g: string, budget: number): string {
  const d = Number(g[0]);
  const rest = g.slice(1);
  const alts: string[] = [];
  if (d > 0) alts.push(`${digits(0, d - 1)}\\d{0,${budget - 1}}`);
  alts.push(rest === '' ? `${d}0{0,${budget - 1}}` : `${d}(?:${leq(rest, budget - 1)})?`);
  return alts.join('|');
}

/** Non-empty digit strings s with .s < .g (g non-empty, so its last digit is not 0). */
function lt(g: string, budget: number): string {
  const d = Number(g[0]);
  const rest = g.slice(1);
  const alts: string[] = [];
  if (d > 0) alts.push(`${digits(0, d - 1)}\\d{0,${budget - 1}}`);
  if (rest !== '') alts.push(`${d}(?:${lt(rest, budget - 1)})?`);
  return alts.join('|');
}
