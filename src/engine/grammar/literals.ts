// Small automata over fixed byte strings: a literal trie (tool names, property keys, enum values)
// and a marker DFA (free text that runs until `</think>` or `</parameter>`).

import { GrammarError } from './errors.js';

const utf8 = new TextEncoder();

/**
 * Bit that stands for literal i in a trie's `below` masks. Literals past 30 share bit 31, which a
 * "seen" mask never holds (see seenBit): they are not tracked, so they stay open.
 */
export function literalBit(i: number): number {
  return i < 31 ? 1 << i : 1 << 31;
}

/** Bit that records literal i as used in a "seen" mask; 0 past 30 (untracked). */
export function seenBit(i: number): number {
  return i < 31 ? 1 << i : 0;
}

/** A trie of literals. Node 0 is the root; term[i] is the literal ending at node i, or -1. */
export class LiteralTrie {
  readonly term: Int32Array;
  readonly hasKids: Uint8Array;
  /** literalBit of every literal in each node's subtree, OR-ed. */
  readonly below: Int32Array;
  private readonly edges: Map<number, number>;

  constructor(literals: readonly string[]) {
    const edges = new Map<number, number>();
    const term: number[] = [-1];
    const parent: number[] = [-1];
    literals.forEach((lit, index) => {
      let node = 0;
      for (const b of utf8.encode(lit)) {
        let next = edges.get(node * 256 + b);
        if (next === undefined) {
          next = term.length;
          term.push(-1);
          parent.push(node);
          edges.set(node * 256 + b, next);
        }
        node = next;
      }
      if (node === 0) throw new GrammarError('grammar: empty literal');
      if (term[node] < 0) term[node] = index; // a duplicate keeps its first index
    });
    this.edges = edges;
    this.term = Int32Array.from(term);
    this.hasKids = new Uint8Array(term.length);
    this.below = new Int32Array(term.length);
    for (let i = term.length - 1; i > 0; i--) {
      // Children are created after their parents, so a reverse sweep sees every child first.
      if (term[i] >= 0) this.below[i] |= literalBit(term[i]);
      this.hasKids[parent[i]] = 1;
      this.below[parent[i]] |= this.below[i];
    }
  }

  child(node: number, b: number): number {
    return this.edges.get(node * 256 + b) ?? -1;
  }

  /** True when some literal is a proper prefix of another (its end node has children). */
  get prefixFree(): boolean {
    for (let i = 0; i < this.term.length; i++) if (this.term[i] >= 0 && this.hasKids[i]) return false;
    return true;
  }
}

export const MARK_NONE = 0;
/** An end marker just completed: the free text is over. */
export const MARK_END = 1;
/** A forbidden marker just completed: the text is rejected. */
export const MARK_FORBID = 2;

/** Aho-Corasick over end and forbidden markers, as a full byte transition table. */
export class MarkerDfa {
  /** next[state * 256 + byte]. */
  readonly next: Int32Array;
  readonly out: Uint8Array;

  /** Markers are text (UTF-8) or raw bytes (a single byte past ASCII, say). */
  constructor(ends: readonly (string | Uint8Array)[], forbidden: readonly (string | Uint8Array)[]) {
    const gotoMaps: Map<number, number>[] = [new Map()];
    const own: number[] = [MARK_NONE];
    const add = (marker: string | Uint8Array, kind: number) => {
      let s = 0;
      for (const b of typeof marker === 'string' ? utf8.encode(marker) : marker) {
        let t = gotoMaps[s].get(b);
        if (t === undefined) {
          t = gotoMaps.length;
          gotoMaps.push(new Map());
          own.push(MARK_NONE);
          gotoMaps[s].set(b, t);
        }
        s = t;
      }
      if (s === 0) throw new GrammarError('grammar: empty marker');
      own[s] = kind;
    };
    for (const m of ends) add(m, MARK_END);
    for (const m of forbidden) add(m, MARK_FORBID);

    const n = gotoMaps.length;
    this.next = new Int32Array(n * 256);
    this.out = Uint8Array.from(own);
    const fail = new Int32Array(n);
    // Breadth-first, so a state's failure target is complete before the state is.
    const queue: number[] = [];
    for (let b = 0; b < 256; b++) {
      const t = gotoMaps[0].get(b) ?? 0;
      this.next[b] = t;
      if (t !== 0) queue.push(t);
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const s = queue[qi];
      if (this.out[s] === MARK_NONE) this.out[s] = this.out[fail[s]];
      for (let b = 0; b < 256; b++) {
        const t = gotoMaps[s].get(b);
        if (t === undefined) {
          this.next[s * 256 + b] = this.next[fail[s] * 256 + b];
        } else {
          fail[t] = this.next[fail[s] * 256 + b];
          this.next[s * 256 + b] = t;
          queue.push(t);
        }
      }
    }
  }
}
