// Length bounds (in code points) on text a pattern matches: a JSON string with both `pattern` and
// minLength / maxLength. The matcher counts code points in its frame; this table says, for a
// (state, count) pair, whether some way to finish still lands within the bounds, so the grammar
// never leads into a dead end. It needs the pattern's full state graph (explored at compile time).
//
// It also gives mask-cache keys for counts: counts whose futures agree for as far as one token can
// reach (the vocabulary's longest token) share a key, so a maxLength-1000 string does not cost a
// full-vocabulary walk per count.

import type { CfgMachine } from './cfg-machine.js';
import { SchemaError } from './errors.js';

/** Most work (states × lengths × classes) a table may take. */
const MAX_WORK = 40_000_000;

export class CountTable {
  /** Counts are kept at most this: hi, or lo when there is no upper bound (past lo the count stops mattering). */
  readonly cap: number;
  private readonly live: Uint8Array;
  private readonly colId: Int32Array;
  private readonly runEnd: Float64Array;

  constructor(
    machine: CfgMachine,
    readonly lo: number,
    /** -1: no upper bound. */
    readonly hi: number,
    what: string,
  ) {
    const trans = machine.table();
    const states = machine.stateCount;
    const classes = machine.classCount;
    // Path lengths that matter: up to hi; without one, up to lo + states (a longer path to the end
    // can be shortened by a cycle of at most `states` code points and still reach lo).
    const maxLen = hi >= 0 ? hi : lo + states;
    if (states * (maxLen + 1) * classes > MAX_WORK) throw new SchemaError(`${what}: too complex for its length bounds`);
    this.cap = hi >= 0 ? hi : lo;

    // Distinct (next, startsCodePoint) moves out of each state.
    const moves: number[][] = [];
    for (let s = 0; s < states; s++) {
      const m = new Set<number>();
      for (let c = 0; c < classes; c++) if (trans[s * classes + c] >= 0) m.add(trans[s * classes + c]);
      moves.push([...m]);
    }
    // can[s * W + len]: from s, the text can end after exactly len more code points.
    const W = maxLen + 1;
    const can = new Uint8Array(states * W);
    for (let len = 0; len < W; len++) {
      for (let changed = true; changed;) {
        changed = false;
        for (let s = 0; s < states; s++) {
          if (can[s * W + len]) continue;
          let ok = len === 0 && machine.accepts(s);
          for (const t of moves[s]) {
            if (ok) break;
            const to = t >> 1;
            if ((t & 1) === 0) ok = can[to * W + len] === 1;
            else if (len > 0) ok = can[to * W + len - 1] === 1;
          }
          if (!ok) continue;
          can[s * W + len] = 1;
          changed = true;
        }
      }
    }
    // live[s * (cap + 1) + count]: some len in [lo - count, hi - count] (or up to maxLen) ends there.
    const C = this.cap + 1;
    this.live = new Uint8Array(states * C);
    const prefix = new Int32Array(W + 1);
    for (let s = 0; s < states; s++) {
      for (let len = 0; len < W; len++) prefix[len + 1] = prefix[len] + can[s * W + len];
      for (let count = 0; count < C; count++) {
        const from = Math.max(0, lo - count);
        const to = hi >= 0 ? hi - count : Math.min(maxLen, lo - count + states);
        if (to >= from && prefix[to + 1] - prefix[from] > 0) this.live[s * C + count] = 1;
      }
    }
    // Column ids (which states are live at a count, and whether the count reached lo), and how far
    // each count's column repeats.
    const ids = new Map<string, number>();
    this.colId = new Int32Array(C);
    for (let count = 0; count < C; count++) {
      let key = count >= lo ? '+' : '-';
      for (let s = 0; s < states; s++) key += this.live[s * C + count];
      let id = ids.get(key);
      if (id === undefined) ids.set(key, (id = ids.size));
      this.colId[count] = id;
    }
    this.runEnd = new Float64Array(C);
    // With no upper bound the last count absorbs: its run never ends. With one, the count past hi is refused.
    this.runEnd[C - 1] = hi >= 0 ? C : Infinity;
    for (let count = C - 2; count >= 0; count--)
      this.runEnd[count] = this.colId[count] === this.colId[count + 1] ? this.runEnd[count + 1] : count + 1;
  }

  /** Whether `count` code points so far in `state` can still finish within the bounds. */
  isLive(state: number, count: number): boolean {
    return this.live[state * (this.cap + 1) + count] === 1;
  }

  /** The count as a mask-cache key: counts whose column repeats past the horizon (bytes in one token) share one. */
  key(count: number, horizon: number): number {
    return this.runEnd[count] - count > horizon ? -1 - this.colId[count] : count;
  }
}
