// The pushdown matcher: one byte in, the next state out (or null when the byte is not allowed).
//
// A frame that has consumed its last byte pops at once (it returns its parent), so a state's top
// frame always still wants input. Frames that cannot tell they are done until they see what
// follows (numbers, whitespace, a literal that prefixes a longer one) pop on that next byte and
// hand it to their parent. A parent's progress is recorded when it pushes a child, so popping is
// just returning `up`. Frames never look at `up` except to pop: a frame's future depends on the
// frame alone, which is what lets token-mask.ts cache masks by top frame.

import { seenBit, MARK_END, MARK_FORBID, MARK_NONE } from './literals.js';
import {
  ACCEPTED,
  COUNTED,
  EOS,
  EXTRA_KEY_BODY,
  EXTRA_KEYS,
  enter,
  Frame,
  FREE_KEYS,
  FREE_STRING,
  HOLE_FED,
  INTEGER,
  JSON_WS,
  KEY_HAS_COLON,
  Kind,
  NO_OPEN,
  PY_ESCAPES,
  type GNode,
} from './nodes.js';

const isWs = (b: number) => b === 0x20 || b === 0x0a || b === 0x09 || b === 0x0d;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46);

// Str sub-states (s).
const S_START = 0;
const S_BODY = 1;
const S_ESC = 2;
const S_HEX = 3; // 3..6: \u digits seen so far = s - 3
const S_CONT1 = 7; // UTF-8 continuation bytes still due: 1, 2, 3
const S_CONT3 = 9;
const S_SURR = 10; // after \uD in a counted string: the next digit must be 0-7
// After a UTF-8 lead byte whose second byte has a narrower range (no overlong forms, no surrogates,
// nothing past U+10FFFF): E0 → A0-BF, ED → 80-9F, F0 → 90-BF, F4 → 80-8F.
const S_E0 = 11;
const S_ED = 12;
const S_F0 = 13;
const S_F4 = 14;
/** [sub-state, lowest, highest second byte, sub-state after it]. */
const NARROW: readonly (readonly [number, number, number])[] = [
  [0xa0, 0xbf, S_CONT1],
  [0x80, 0x9f, S_CONT1],
  [0x90, 0xbf, S_CONT1 + 1],
  [0x80, 0x8f, S_CONT1 + 1],
];

// Num phases (s & 15); digit counts in s >> 4.
const N_START = 0;
const N_MINUS = 1;
const N_ZERO = 2;
const N_INT = 3;
const N_DOT = 4;
const N_FRAC = 5;
const N_E = 6;
const N_ESIGN = 7;
const N_EXP = 8;
const MAX_INT_DIGITS = 16;
const MAX_FRAC_DIGITS = 16;
const MAX_EXP_DIGITS = 2; // e99 at most: every number stays finite (16 digits × 1e99), also where a parser converts it

// Obj phases (s & 7); whitespace count in s >> 3.
const O_OPEN = 0;
const O_FIRST = 1; // after `{`
const O_KEY = 2; // inside a known key; k = key-trie node
const O_COLON = 3; // k = property index
const O_VALUE = 4; // k = property index
const O_AFTER = 5; // after a value
const O_NEXT = 6; // after `,`
const O_EXTRA_END = 7; // after an extra key's body (EXTRA_KEYS): its closing quote
/** k of an extra key (EXTRA_KEYS): its value is the object's last kid. */
const EXTRA = -1;

// XmlObj phases (s & 1); whitespace count in s >> 1.
const X_NEXT = 0;
const X_TAG = 1; // k = tag-trie node

// Arr phases (s & 3); whitespace count in s >> 2; k = items so far, capped where counting stops mattering.
const A_OPEN = 0;
const A_FIRST = 1;
const A_AFTER = 2;
const A_NEXT = 3;

/** The state after byte `b` (0..255, or EOS), or null when `b` is not allowed. */
export function feed(state: Frame, b: number): Frame | null {
  let f = state;
  for (;;) {
    const n = f.node;
    switch (n.kind) {
      case Kind.Lit: {
        if (n.bytes[f.s] !== b) return null;
        return f.s + 1 === n.bytes.length ? f.up : new Frame(n, f.s + 1, 0, 0, f.up);
      }

      case Kind.Ws: {
        if (isWs(b) && f.s < n.max) return new Frame(n, f.s + 1, 0, 0, f.up);
        break; // pop, hand b on
      }

      case Kind.Seq: {
        const last = n.kids.length - 1;
        if (f.s > last) break;
        const kid = n.kids[f.s]!;
        // The last kid replaces the sequence (a tail call), so recursive repetition does not grow the stack.
        f = f.s === last ? enter(kid, f.up) : enter(kid, new Frame(n, f.s + 1, 0, 0, f.up));
        continue;
      }

      case Kind.Alt: {
        const next = n.kids[b];
        if (!next) return null;
        f = enter(next, f.up);
        continue;
      }

      case Kind.Switch: {
        const t = n.trie!;
        const c = t.child(f.k, b);
        if (c < 0) {
          if (t.term[f.k] >= 0) break; // a complete literal that prefixes longer ones: it ends here
          return null;
        }
        const term = t.term[c];
        if (term < 0 || t.hasKids[c]) return new Frame(n, 0, c, 0, f.up);
        const cont = n.kids[term];
        return cont ? enter(cont, f.up) : f.up;
      }

      case Kind.Until: {
        if (b === EOS) return null;
        const d = n.dfa!;
        const s = d.next[f.s * 256 + b];
        const mark = d.out[s];
        if (mark === MARK_END) return f.up;
        if (mark === MARK_FORBID) return null;
        return s === f.s ? f : new Frame(n, s, 0, 0, f.up);
      }

      case Kind.Str:
        return stepString(f, b);

      case Kind.Num: {
        const r = stepNumber(f, b);
        if (r !== undefined) return r;
        break;
      }

      case Kind.Cfg: {
        const r = stepCfg(f, b);
        if (r !== undefined) return r;
        break;
      }

      case Kind.Obj: {
        const kid = objectChild(f, b);
        if (kid === null) return stepObject(f, b);
        f = kid; // b starts a value (or a free key): hand it to the new frame
        continue;
      }

      case Kind.XmlObj:
        return stepXmlParams(f, b);

      case Kind.Arr: {
        const kid = arrayChild(f, b);
        if (kid === null) return stepArray(f, b);
        f = kid;
        continue;
      }

      case Kind.End:
        return b === EOS ? ACCEPTED : null;

      case Kind.Hole:
        return HOLE_FED;

      case Kind.Accepted:
      case Kind.HoleFed:
        return null;
    }
    // The frame is done without consuming b: pop and let the parent have it.
    if (f.up === null) return null;
    f = f.up;
  }
}

function stepString(f: Frame, b: number): Frame | null {
  const s = f.s;
  const n = f.node;
  const quote = n.min === 0 ? 0x22 : n.min;
  if (s === S_START) return b === quote ? new Frame(n, S_BODY, 0, 0, f.up) : null;
  if (s === S_BODY && b === quote) return f.m >= n.lo ? f.up : null;
  // A guarded string (n.dfa): its raw text must not contain a marker (k = the marker DFA's state).
  let k = f.k;
  if (n.dfa !== null && b !== EOS) {
    k = n.dfa.next[k * 256 + b];
    if (n.dfa.out[k] !== MARK_NONE) return null;
  }
  const m = f.m;
  if (s === S_BODY) {
    if (b < 0x20 || b === EOS) return null; // JSON forbids raw control characters (and Python strings get them escaped)
    // A code point starts here: count it.
    let c = m;
    if ((n.flags & COUNTED) !== 0) {
      c = m + 1;
      if (n.hi < 0) c = Math.min(c, n.lo);
      else if (c > n.hi) return null;
    }
    if (b === 0x5c) return new Frame(n, S_ESC, k, c, f.up);
    if (b < 0x80) return k === f.k && c === m ? f : new Frame(n, S_BODY, k, c, f.up);
    // A UTF-8 lead byte: how many continuation bytes it announces.
    if (b >= 0xc2 && b <= 0xdf) return new Frame(n, S_CONT1, k, c, f.up);
    if (b === 0xe0 || b === 0xed) return new Frame(n, b === 0xe0 ? S_E0 : S_ED, k, c, f.up);
    if (b >= 0xe1 && b <= 0xef) return new Frame(n, S_CONT1 + 1, k, c, f.up);
    if (b === 0xf0 || b === 0xf4) return new Frame(n, b === 0xf0 ? S_F0 : S_F4, k, c, f.up);
    if (b >= 0xf1 && b <= 0xf3) return new Frame(n, S_CONT3, k, c, f.up);
    return null;
  }
  if (s === S_ESC) {
    if (b === 0x75) return new Frame(n, S_HEX, k, m, f.up); // \u: four hex digits
    let simple: boolean;
    if ((n.flags & PY_ESCAPES) !== 0) {
      if (b === 0x78) return new Frame(n, S_HEX + 2, k, m, f.up); // \x: two hex digits
      simple = b === 0x22 || b === 0x27 || b === 0x5c || b === 0x6e || b === 0x72 || b === 0x74;
    } else {
      simple = b === 0x22 || b === 0x5c || b === 0x2f || b === 0x62 || b === 0x66 || b === 0x6e || b === 0x72 || b === 0x74;
    }
    return simple ? new Frame(n, S_BODY, k, m, f.up) : null;
  }
  if (s === S_SURR) return b >= 0x30 && b <= 0x37 ? new Frame(n, S_HEX + 2, k, m, f.up) : null;
  if (s < S_CONT1) {
    if (!isHex(b)) return null;
    // Counted strings take no escaped surrogates (\uD800-\uDFFF): a pair is one code point, not two.
    if (s === S_HEX && (b === 0x64 || b === 0x44) && (n.flags & COUNTED) !== 0) return new Frame(n, S_SURR, k, m, f.up);
    return new Frame(n, s === S_HEX + 3 ? S_BODY : s + 1, k, m, f.up);
  }
  if (s <= S_CONT3) {
    if (b < 0x80 || b > 0xbf) return null;
    return new Frame(n, s === S_CONT1 ? S_BODY : s - 1, k, m, f.up);
  }
  if (s >= S_E0 && s <= S_F4) {
    const [lo, hi, next] = NARROW[s - S_E0];
    return b >= lo && b <= hi ? new Frame(n, next, k, m, f.up) : null;
  }
  return null;
}

/** Next grammar-text state; null = rejected; undefined = the text is complete and `b` belongs to the parent. */
function stepCfg(f: Frame, b: number): Frame | null | undefined {
  const n = f.node;
  const machine = n.cfg!;
  const counts = n.counts;
  const done = machine.accepts(f.s) && f.m >= n.lo;
  const t = b === EOS ? -1 : machine.next(f.s, b);
  if (t < 0) return done ? undefined : null;
  const s = t >> 1;
  let c = f.m;
  if (counts !== null) {
    if ((t & 1) !== 0) c = Math.min(c + 1, counts.hi < 0 ? counts.cap : c + 1);
    // Past the bounds, or nowhere left to finish within them: the pattern cannot take b.
    if (c > counts.cap || !counts.isLive(s, c)) return done ? undefined : null;
  }
  // Nothing can follow: done at once (a frame on the stack always wants input).
  if (!machine.live(s)) return f.up;
  return s === f.s && c === f.m ? f : new Frame(n, s, 0, c, f.up);
}

/** Next number state; null = rejected; undefined = the number is complete and `b` belongs to the parent. */
function stepNumber(f: Frame, b: number): Frame | null | undefined {
  const n = f.node;
  const phase = f.s & 15;
  const count = f.s >> 4;
  const integer = (n.flags & INTEGER) !== 0;
  const to = (p: number, c = 0) => new Frame(n, p | (c << 4), 0, 0, f.up);
  const digit = isDigit(b);
  const fraction = !integer && b === 0x2e;
  const exponent = !integer && (b === 0x65 || b === 0x45);
  switch (phase) {
    case N_START:
    case N_MINUS:
      if (b === 0x2d && phase === N_START) return to(N_MINUS);
      if (b === 0x30) return to(N_ZERO);
      return digit ? to(N_INT, 1) : null;
    case N_ZERO:
      if (fraction) return to(N_DOT);
      if (exponent) return to(N_E);
      return undefined; // JSON allows no digit after a leading zero
    case N_INT:
      if (digit) return count < MAX_INT_DIGITS ? to(N_INT, count + 1) : undefined;
      if (fraction) return to(N_DOT);
      if (exponent) return to(N_E);
      return undefined;
    case N_DOT:
      return digit ? to(N_FRAC, 1) : null;
    case N_FRAC:
      if (digit) return count < MAX_FRAC_DIGITS ? to(N_FRAC, count + 1) : undefined;
      if (exponent) return to(N_E);
      return undefined;
    case N_E:
      if (b === 0x2b || b === 0x2d) return to(N_ESIGN);
      return digit ? to(N_EXP, 1) : null;
    case N_ESIGN:
      return digit ? to(N_EXP, 1) : null;
    case N_EXP:
      if (digit && count < MAX_EXP_DIGITS) return to(N_EXP, count + 1);
      return undefined;
  }
  return null;
}

/** An object frame's phase; a frame that starts past its open bracket (NO_OPEN) is at O_FIRST. */
function objectPhase(f: Frame): number {
  const phase = f.s & 7;
  return phase === O_OPEN && (f.node.flags & NO_OPEN) !== 0 ? O_FIRST : phase;
}

/** The frame for the value (or free key) that b starts, pushed above the object; null when b does not start one. */
function objectChild(f: Frame, b: number): Frame | null {
  const n = f.node;
  const phase = objectPhase(f);
  if (isWs(b)) return null;
  if (phase === O_VALUE) {
    if ((n.flags & FREE_KEYS) !== 0) return enter(n.kids[0]!, new Frame(n, O_AFTER, 0, f.m, f.up));
    if (f.k === EXTRA) return enter(n.kids[n.kids.length - 1]!, new Frame(n, O_AFTER, 0, f.m, f.up));
    return enter(n.kids[f.k]!, new Frame(n, O_AFTER, 0, f.m | seenBit(f.k), f.up));
  }
  if ((n.flags & FREE_KEYS) !== 0 && (phase === O_FIRST || phase === O_NEXT) && b !== n.bytes[1]) {
    const key: GNode = n.kids[1] ?? FREE_STRING;
    return enter(key, new Frame(n, (n.flags & KEY_HAS_COLON) !== 0 ? O_VALUE : O_COLON, 0, f.m, f.up));
  }
  return null;
}

/** Next object state when b stays in the object: this object's next frame, or the parent when b closes it. */
function stepObject(f: Frame, b: number): Frame | null {
  const n = f.node;
  const phase = objectPhase(f);
  const wsCount = f.s >> 3;
  const to = (p: number, k = 0) => new Frame(n, p, k, f.m, f.up);
  if (phase !== O_OPEN && phase !== O_KEY && phase !== O_EXTRA_END && isWs(b)) {
    return wsCount < JSON_WS ? new Frame(n, phase | ((wsCount + 1) << 3), f.k, f.m, f.up) : null;
  }
  const t = n.trie;
  const close = n.bytes[1];
  const extra = (n.flags & EXTRA_KEYS) !== 0;
  switch (phase) {
    case O_OPEN:
      return b === n.bytes[0] ? to(O_FIRST) : null;
    case O_FIRST:
    case O_NEXT: {
      if (b === close && phase === O_FIRST) return n.required === 0 ? f.up : null;
      if (t === null) return null;
      const c = t.child(0, b);
      // With extra keys, s >> 3 follows the key's text in EXTRA_KEY_BODY (in case it leaves the listed keys).
      if (extra) return c >= 0 ? new Frame(n, O_KEY | (EXTRA_KEY_BODY.cfg!.start << 3), c, f.m, f.up) : null;
      return c >= 0 && (t.below[c] & ~f.m) !== 0 ? to(O_KEY, c) : null;
    }
    case O_EXTRA_END:
      return b === 0x22 ? to(O_COLON, EXTRA) : null;
    case O_KEY: {
      if (extra) return stepExtraKey(f, b);
      const c = t!.child(f.k, b);
      if (c < 0 || (t!.below[c] & ~f.m) === 0) return null; // unknown or repeated key
      const p = t!.term[c];
      // Key literals are prefix-free (JSON keys end in `"`), so a complete one is the key.
      if (p < 0) return to(O_KEY, c);
      return to((n.flags & KEY_HAS_COLON) !== 0 ? O_VALUE : O_COLON, p);
    }
    case O_COLON:
      return b === 0x3a ? to(O_VALUE, f.k) : null;
    case O_AFTER:
      // A comma only when some key is left to write, so `,` never leads to a dead end.
      if (b === 0x2c) return t === null || extra || (t.below[0] & ~f.m) !== 0 ? to(O_NEXT) : null;
      if (b === close) return (n.required & ~f.m) === 0 ? f.up : null;
      return null;
  }
  return null;
}

/**
 * A key of an object with extra keys: a listed key as long as the text follows the key trie (each
 * at most once), any other key once it leaves it. Keys are written as JSON.stringify writes them
 * (EXTRA_KEY_BODY), so a key that leaves the trie is not a listed key in another spelling.
 */
function stepExtraKey(f: Frame, b: number): Frame | null {
  const n = f.node;
  const t = n.trie!;
  const body = EXTRA_KEY_BODY.cfg!;
  const ks = f.s >> 3;
  if (b === EOS) return null;
  const c = t.child(f.k, b);
  if (c >= 0) {
    const p = t.term[c];
    if (p >= 0) return (seenBit(p) & f.m) !== 0 ? null : new Frame(n, O_COLON, p, f.m, f.up);
    const next = body.next(ks, b);
    return next < 0 ? null : new Frame(n, O_KEY | ((next >> 1) << 3), c, f.m, f.up);
  }
  // Off the listed keys: an extra key. Its closing quote, or the rest of its text.
  if (b === 0x22) return body.accepts(ks) ? new Frame(n, O_COLON, EXTRA, f.m, f.up) : null;
  const next = body.next(ks, b);
  if (next < 0) return null;
  return new Frame(EXTRA_KEY_BODY, next >> 1, 0, 0, new Frame(n, O_EXTRA_END, 0, f.m, f.up));
}

/** fam1 parameters: `<parameter=KEY>` opens a value frame, `</function>` (literal 0) closes. */
function stepXmlParams(f: Frame, b: number): Frame | null {
  const n = f.node;
  const t = n.trie!;
  const wsCount = f.s >> 1;
  let node = 0;
  if ((f.s & 1) === X_NEXT) {
    if (isWs(b)) return wsCount < JSON_WS ? new Frame(n, X_NEXT | ((wsCount + 1) << 1), 0, f.m, f.up) : null;
  } else {
    node = f.k;
  }
  const c = t.child(node, b);
  // Literal 0 (the closing tag) stays unseen but is only open once every required key was given.
  const open = ~f.m & ((n.required & ~f.m) === 0 ? ~0 : ~1);
  if (c < 0 || (t.below[c] & open) === 0) return null;
  const lit = t.term[c];
  if (lit < 0) return new Frame(n, X_TAG, c, f.m, f.up);
  if (lit === 0) return f.up;
  return enter(n.kids[lit]!, new Frame(n, X_NEXT, 0, f.m | seenBit(lit), f.up));
}

/** The frame for the item that b starts, pushed above the array; null when b does not start one. */
function arrayChild(f: Frame, b: number): Frame | null {
  const n = f.node;
  const phase = f.s & 3;
  if (isWs(b) || (phase !== A_FIRST && phase !== A_NEXT)) return null;
  if (phase === A_FIRST && (b === 0x5d || n.max === 0)) return null;
  // Past both bounds and the prefix items the exact count no longer matters; capping it keeps cache keys few.
  const prefix = n.kids.length - 1;
  const count = Math.min(f.k + 1, Math.max(n.min, n.max, prefix));
  return enter((f.k < prefix ? n.kids[f.k + 1] : n.kids[0])!, new Frame(n, A_AFTER, count, 0, f.up));
}

/** Next array state when b stays in the array: this array's next frame, or the parent when b closes it. */
function stepArray(f: Frame, b: number): Frame | null {
  const n = f.node;
  const phase = f.s & 3;
  const wsCount = f.s >> 2;
  if (phase === A_OPEN) return b === 0x5b ? new Frame(n, A_FIRST, 0, 0, f.up) : null;
  if (isWs(b)) return wsCount < JSON_WS ? new Frame(n, phase | ((wsCount + 1) << 2), f.k, 0, f.up) : null;
  if (b === 0x5d && phase !== A_NEXT) return f.k >= n.min ? f.up : null;
  if (b === 0x2c && phase === A_AFTER) return n.max < 0 || f.k < n.max ? new Frame(n, A_NEXT, f.k, 0, f.up) : null;
  return null;
}
