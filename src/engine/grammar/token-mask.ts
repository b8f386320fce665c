// Token masks: which tokens keep the matcher alive from a given state.
//
// The vocabulary trie is walked alongside the matcher, so a prefix shared by many tokens is fed
// once and a rejected prefix prunes its whole subtree. A full walk is still expensive in free
// states (inside a JSON string nearly every token is allowed), so walks are cached by the state's
// top frame: the top frame is walked over a Hole instead of its real parent, which yields
//   - the tokens accepted without ever leaving the top frame — true in any context, and
//   - the frontier: the trie positions where the top frame finished and its parent takes over.
// A mask is then the cached set plus, for each frontier entry, a short walk from that trie
// position with the real parent — usually a few suffixes such as `",` or `}`.

import { feed } from './matcher.js';
import { COUNTED, COUNTING_STRING, Frame, HOLE, HOLE_FED, Kind } from './nodes.js';
import type { VocabTrie } from './vocab-trie.js';

/** What a top frame allows by itself, for any parent. */
export interface MaskEntry {
  /** Allowed token ids, or, when `complement`, the ids that are not allowed. */
  ids: Int32Array;
  complement: boolean;
  /** Trie node << 1 | 1 when the top frame popped before the node's byte (the parent must take it), | 0 after it. */
  frontier: Int32Array;
  /**
   * COUNTING_STRING's entries: the allowed ids by the code points each adds, most first (`long`,
   * `longCounts`), and the code points each frontier entry adds before the string ends.
   */
  long: Int32Array | null;
  longCounts: Uint16Array | null;
  frontierCounts: Int32Array | null;
}

/** Mask entries by top-frame key, the oldest dropped first once `capacity` is reached. */
export class MaskCache {
  private readonly map = new Map<string, MaskEntry>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): MaskEntry | undefined {
    return this.map.get(key);
  }

  set(key: string, entry: MaskEntry): void {
    if (this.map.size >= this.capacity) this.map.delete(this.map.keys().next().value!);
    this.map.set(key, entry);
  }
}

/**
 * The frame whose walk gives the mask of `state`: itself, or for a counted string the unlimited
 * COUNTING_STRING in the same sub-state (its entry keeps per-token counts; applyMaskEntry cuts
 * them to the string's bounds), so that no count needs a walk of its own.
 */
export function maskFrame(state: Frame): Frame {
  const n = state.node;
  if (n.kind !== Kind.Str || (n.flags & COUNTED) === 0 || n === COUNTING_STRING) return state;
  return new Frame(COUNTING_STRING, state.s, state.k, 0, state.up);
}

/**
 * The cache key of a top frame: everything its future depends on, as far as one token reaches
 * (`horizon`: the vocabulary's longest token in bytes). A grammar text's count of code points is
 * kept exactly only near a bound; counts whose futures agree for a token's length share a key.
 */
export function frameKey(f: Frame, horizon: number): string {
  const n = f.node;
  return `${n.id}:${f.s}:${f.k}:${n.counts === null ? f.m : n.counts.key(f.m, horizon)}`;
}

/** Walks the whole trie from the top frame alone (over a Hole). */
export function buildMaskEntry(trie: VocabTrie, size: number, top: Frame): MaskEntry {
  const { byte, end, tokStart, tokIds } = trie;
  const ids = new IntList();
  const frontier = new IntList();
  // COUNTING_STRING keeps each token's count of code points (its frames count from 0).
  const counting = top.node === COUNTING_STRING;
  const idCounts = new IntList();
  const frontierCounts = new IntList();
  const visit = (node: number, st: Frame): void => {
    for (let i = tokStart[node]; i < tokStart[node + 1]; i++) {
      ids.push(tokIds[i]);
      if (counting) idCounts.push(st.m);
    }
    for (let c = node + 1, e = end[node]; c < e; c = end[c]) {
      const next = feed(st, byte[c]);
      if (next === null) continue;
      if (next === HOLE_FED || next === HOLE) {
        frontier.push((c << 1) | (next === HOLE_FED ? 1 : 0));
        if (counting) frontierCounts.push(st.m);
      } else {
        visit(c, next);
      }
    }
  };
  visit(0, new Frame(top.node, top.s, top.k, counting ? 0 : top.m, HOLE));

  let list = ids.toArray();
  let long: Int32Array | null = null;
  let longCounts: Uint16Array | null = null;
  if (counting) [long, longCounts] = byCountDescending(list, idCounts.toArray());
  const complement = list.length > size / 2;
  if (complement) {
    const allowed = new Uint8Array(size);
    for (const id of list) allowed[id] = 1;
    const rest = new IntList();
    for (let id = 0; id < size; id++) if (!allowed[id]) rest.push(id);
    list = rest.toArray();
  }
  return {
    ids: list,
    complement,
    frontier: frontier.toArray(),
    long,
    longCounts,
    frontierCounts: counting ? frontierCounts.toArray() : null,
  };
}

/**
 * Sets out[id] = 1 for every token allowed from `state`, whose top frame's entry is `entry`.
 * `out` must be zeroed (ids at and past `size` are left alone).
 */
export function applyMaskEntry(trie: VocabTrie, size: number, state: Frame, entry: MaskEntry, out: Uint8Array): void {
  // A counted string's room: code points still allowed, and still needed before it may end.
  const n = state.node;
  const room = n.hi < 0 ? Infinity : n.hi - state.m;
  const need = n.lo - state.m;
  if (entry.complement) {
    out.fill(1, 0, size);
    for (const id of entry.ids) out[id] = 0;
  } else {
    for (const id of entry.ids) out[id] = 1;
  }
  // Tokens that would write more code points than the string has room for.
  const long = entry.long;
  const longCounts = entry.longCounts;
  if (long !== null && longCounts !== null) for (let i = 0; i < long.length && longCounts[i] > room; i++) out[long[i]] = 0;
  const parent = state.up;
  if (parent === null) return;
  const f = entry.frontier;
  const fc = entry.frontierCounts;
  for (let i = 0; i < f.length; i++) {
    if (fc !== null && (fc[i] > room || fc[i] < need)) continue;
    const node = f[i] >> 1;
    if ((f[i] & 1) === 0) {
      walk(trie, node, parent, out);
    } else {
      const next = feed(parent, trie.byte[node]);
      if (next !== null) walk(trie, node, next, out);
    }
  }
}

/** Marks the tokens in the subtree of `node` that `st` (the state after node's bytes) allows. */
export function walk(trie: VocabTrie, node: number, st: Frame, out: Uint8Array): void {
  const { byte, end, tokStart, tokIds } = trie;
  for (let i = tokStart[node]; i < tokStart[node + 1]; i++) out[tokIds[i]] = 1;
  for (let c = node + 1, e = end[node]; c < e; c = end[c]) {
    const next = feed(st, byte[c]);
    if (next !== null) walk(trie, c, next, out);
  }
}

/** The ids ordered by their counts, largest first (a counting sort: counts are at most a token's length). */
function byCountDescending(ids: Int32Array, counts: Int32Array): [Int32Array, Uint16Array] {
  let max = 0;
  for (const c of counts) max = Math.max(max, c);
  const start = new Int32Array(max + 2);
  for (const c of counts) start[max - c + 1]++;
  for (let i = 1; i < start.length; i++) start[i] += start[i - 1];
  const sorted = new Int32Array(ids.length);
  const sortedCounts = new Uint16Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const at = start[max - counts[i]]++;
    sorted[at] = ids[i];
    sortedCounts[at] = Math.min(counts[i], 0xffff);
  }
  return [sorted, sortedCounts];
}

/** Sets logits of disallowed tokens (mask[id] = 0, or id past the mask) to -Infinity. */
export function maskLogits(logits: Float32Array, mask: Uint8Array): void {
  for (let i = 0; i < logits.length; i++) if (!(mask[i] === 1)) logits[i] = -Infinity;
}

class IntList {
  private a = new Int32Array(256);
  private n = 0;

  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Int32Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }

  toArray(): Int32Array {
    return this.a.slice(0, this.n);
  }
}
