// Runs a byte-level context-free grammar (cfg.ts) as llama.cpp does: the parser's state is the set
// of its possible parse stacks, each stack a list of grammar positions whose top is a terminal. Here
// stacks are interned (a stack is a position over an interned parent, so shared tails are shared)
// and so are the sets, into small integers: the matcher keeps one integer in its frame, and a
// transition, once worked out, is a table lookup (state × byte class → state). A grammar whose
// states multiply past a limit raises GrammarError instead of taking unbounded memory.
//
// Transitions also say whether their byte started a code point (for strings with length bounds),
// which all stacks agree on: they read the same bytes, and UTF-8 and JSON escapes are prefix codes.

import { END, isTerm, startsCodePoint, type Cfg } from './cfg.js';
import { GrammarError, SchemaError } from './errors.js';

const UNKNOWN = -2;
const NONE = -1;
/** Stack ids and positions pack into one safe integer key. */
const POS_SCALE = 0x4000000;
const MAX_STACKS = 1 << 22;

const ACCEPTS = 1;
const LIVE = 2;

export class CfgMachine {
  /** The byte class of each byte: bytes in exactly the same terminals share one. */
  readonly classOf = new Uint8Array(256);
  readonly classCount: number;
  private readonly classByte: Uint8Array;
  // Stacks: id 0 is the empty stack; stack i is position stackPos[i] over stack stackUp[i].
  private readonly stackPos: number[] = [0];
  private readonly stackUp: number[] = [0];
  private readonly stackIds = new Map<number, number>();
  // States: sets of stacks.
  private readonly stateStacks: Int32Array[] = [];
  private readonly stateIds = new Map<string, number>();
  private flags = new Uint8Array(64);
  /** next state << 1 | (the byte started a code point), NONE, or UNKNOWN; classCount entries per state. */
  private trans: Int32Array;
  /** States whose transitions explore() has all worked out. */
  private explored = 0;
  private exploring = false;

  constructor(
    readonly cfg: Cfg,
    /** Most states; past it, GrammarError (at run time) or SchemaError (explore, at compile time). */
    readonly maxStates: number,
    readonly what: string,
  ) {
    const signatures = new Map<string, number>();
    const bytes: number[] = [];
    const termCount = cfg.termBits.length >> 3;
    for (let b = 0; b < 256; b++) {
      let sig = '';
      for (let t = 0; t < termCount; t++) if (cfg.termBits[t * 8 + (b >> 5)] & (1 << (b & 31))) sig += `${t},`;
      let c = signatures.get(sig);
      if (c === undefined) {
        c = signatures.size;
        signatures.set(sig, c);
        bytes.push(b);
      }
      this.classOf[b] = c;
    }
    this.classCount = signatures.size;
    this.classByte = Uint8Array.from(bytes);
    this.trans = new Int32Array(64 * this.classCount).fill(UNKNOWN);
    const start: number[] = [];
    const seen = new Set<number>();
    for (let k = cfg.altIndex[cfg.root]; k < cfg.altIndex[cfg.root + 1]; k++) this.expand(cfg.alts[k], 0, start, seen);
    this.intern(start);
  }

  /** The start state. */
  get start(): number {
    return 0;
  }

  get stateCount(): number {
    return this.stateStacks.length;
  }

  /** next << 1 | startsCodePoint after byte b (0..255), or -1 when b is not allowed. */
  next(state: number, b: number): number {
    const i = state * this.classCount + this.classOf[b];
    let t = this.trans[i];
    if (t === UNKNOWN) this.trans[i] = t = this.transition(state, this.classByte[this.classOf[b]]);
    return t;
  }

  /** The input may end here. */
  accepts(state: number): boolean {
    return (this.flags[state] & ACCEPTS) !== 0;
  }

  /** Some byte may still follow. */
  live(state: number): boolean {
    return (this.flags[state] & LIVE) !== 0;
  }

  /** Works out every reachable state and transition; SchemaError when there are more than maxStates. */
  explore(): void {
    this.exploring = true;
    try {
      for (; this.explored < this.stateStacks.length; this.explored++) {
        for (let c = 0; c < this.classCount; c++) this.next(this.explored, this.classByte[c]);
      }
    } finally {
      this.exploring = false;
    }
  }

  /** Transitions of a fully explored machine: to[state * classCount + class] = next << 1 | cp, or -1. */
  table(): Int32Array {
    this.explore();
    return this.trans.subarray(0, this.stateStacks.length * this.classCount);
  }

  private transition(state: number, b: number): number {
    const { elems, termBits } = this.cfg;
    const out: number[] = [];
    const seen = new Set<number>();
    let cp = 0;
    for (const stack of this.stateStacks[state]) {
      if (stack === 0) continue;
      const pos = this.stackPos[stack];
      const e = elems[pos];
      if ((termBits[(e >> 2) * 8 + (b >> 5)] & (1 << (b & 31))) === 0) continue;
      if (startsCodePoint(e)) cp = 1;
      this.expand(pos + 1, this.stackUp[stack], out, seen);
    }
    if (out.length === 0) return NONE;
    return (this.intern(out) << 1) | cp;
  }

  /**
   * Adds to `out` the stacks that continue at `pos` over stack `up`, with every rule reference on
   * top expanded until terminals are on top (an alternative's end pops to `up`'s position).
   */
  private expand(pos0: number, up0: number, out: number[], seen: Set<number>): void {
    const { elems, alts, altIndex } = this.cfg;
    const work = [pos0, up0];
    while (work.length > 0) {
      const up = work.pop()!;
      const pos = work.pop()!;
      const key = pos * POS_SCALE + up;
      if (seen.has(key)) continue; // the same continuation again (a nullable loop): nothing new
      seen.add(key);
      const e = elems[pos];
      if (e === END) {
        if (up === 0) out.push(0);
        else work.push(this.stackPos[up], this.stackUp[up]);
      } else if (isTerm(e)) {
        out.push(this.stack(pos, up));
      } else {
        // The continuation after the reference; none when it is the alternative's last element (a tail call).
        const cont = elems[pos + 1] === END ? up : this.stack(pos + 1, up);
        const r = e >> 2;
        for (let k = altIndex[r]; k < altIndex[r + 1]; k++) work.push(alts[k], cont);
      }
    }
  }

  private stack(pos: number, up: number): number {
    const key = pos * POS_SCALE + up;
    let id = this.stackIds.get(key);
    if (id === undefined) {
      id = this.stackPos.length;
      if (id >= MAX_STACKS) throw new GrammarError(`${this.what}: the grammar nests too deep (over ${MAX_STACKS} parse stacks)`);
      this.stackPos.push(pos);
      this.stackUp.push(up);
      this.stackIds.set(key, id);
    }
    return id;
  }

  private intern(stacks: number[]): number {
    const sorted = Int32Array.from(new Set(stacks)).sort();
    const key = sorted.join(',');
    let id = this.stateIds.get(key);
    if (id !== undefined) return id;
    id = this.stateStacks.length;
    if (id >= this.maxStates) {
      const message = `${this.what}: too complex (over ${this.maxStates} parser states)`;
      throw this.exploring || id === 0 ? new SchemaError(message) : new GrammarError(message);
    }
    this.stateStacks.push(sorted);
    this.stateIds.set(key, id);
    if (id >= this.flags.length) {
      const f = new Uint8Array(this.flags.length * 2);
      f.set(this.flags);
      this.flags = f;
      const t = new Int32Array(this.flags.length * this.classCount).fill(UNKNOWN);
      t.set(this.trans);
      this.trans = t;
    }
    this.flags[id] = (sorted[0] === 0 ? ACCEPTS : 0) | (sorted[sorted.length - 1] !== 0 ? LIVE : 0);
    return id;
  }
}
