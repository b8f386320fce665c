// Small text-matching helpers shared by the streaming parsers. Every check answers
// "yes", "no" or "partial" (the buffer ends inside the literal), so a parser never
// decides on text it has not seen yet: the decision is the same for every chunking.

export const enum Match {
  No,
  Yes,
  /** The buffer ends before the literal could be confirmed or ruled out. */
  Partial,
}

/** Does `lit` occur in `buf` at `pos`? */
export function matchAt(buf: string, pos: number, lit: string): Match {
  const avail = buf.length - pos;
  if (avail >= lit.length) return buf.startsWith(lit, pos) ? Match.Yes : Match.No;
  return lit.startsWith(buf.slice(pos)) ? Match.Partial : Match.No;
}

/** Result of matchAny when no literal matches / when the buffer ends inside one. */
export const NONE = -1;
export const PARTIAL = -2;

/** Index in `lits` of the first literal that matches at `pos`, else NONE or PARTIAL. */
export function matchAny(buf: string, pos: number, lits: readonly string[]): number {
  let partial = false;
  for (let i = 0; i < lits.length; i++) {
    const m = matchAt(buf, pos, lits[i]!);
    if (m === Match.Yes) return i;
    if (m === Match.Partial) partial = true;
  }
  return partial ? PARTIAL : NONE;
}

export type Found = { kind: 'full'; index: number; marker: string } | { kind: 'partial'; index: number } | { kind: 'none' };

/**
 * The earliest complete occurrence of any marker at or after `from` (ties go to the
 * longest); otherwise the start of a marker prefix that the buffer ends in.
 */
export function findFirst(buf: string, from: number, markers: readonly string[]): Found {
  let best = -1;
  let bestMarker = '';
  for (const m of markers) {
    const i = buf.indexOf(m, from);
    if (i >= 0 && (best < 0 || i < best || (i === best && m.length > bestMarker.length))) {
      best = i;
      bestMarker = m;
    }
  }
  if (best >= 0) return { kind: 'full', index: best, marker: bestMarker };
  const p = partialTail(buf, from, markers);
  return p >= 0 ? { kind: 'partial', index: p } : { kind: 'none' };
}

/** Start of the longest buffer tail (at or after `from`) that is a proper prefix of a marker, or -1. */
export function partialTail(buf: string, from: number, markers: readonly string[]): number {
  let maxLen = 0;
  for (const m of markers) maxLen = Math.max(maxLen, m.length);
  for (let start = Math.max(from, buf.length - maxLen + 1); start < buf.length; start++) {
    const tail = buf.slice(start);
    for (const m of markers) if (m.length > tail.length && m.startsWith(tail)) return start;
  }
  return -1;
}

export function isWs(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\n' || ch === '\t' || ch === '\r';
}

/** Index of the first non-whitespace character at or after `pos` (buf.length if none). */
export function skipWs(buf: string, pos: number): number {
  while (pos < buf.length && isWs(buf[pos])) pos++;
  return pos;
}
