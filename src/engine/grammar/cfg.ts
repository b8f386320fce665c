// Context-free grammars over bytes, the form regexes (regex.ts) and GBNF (gbnf.ts) compile to
// before cfg-machine.ts runs them. A rule is a list of alternatives, an alternative a list of
// elements: a terminal (a set of bytes) or a reference to a rule. Code points become UTF-8
// byte-range sequences (utf8-ranges.ts); inside a JSON string each is spelled the one way JSON
// requires or JSON.stringify chooses (see `codePoints`).

import { SchemaError } from './errors.js';
import { utf8Sequences } from './utf8-ranges.js';

/** Sorted, disjoint code-point ranges. */
export type CodePoints = [lo: number, hi: number][];

/** How code points are written: as UTF-8, or as the body of a JSON string (escapes where JSON requires them). */
export type TextMode = 'raw' | 'json';

/** An element: a terminal (id << 2 | 1, | 2 when its byte starts a code point) or a rule reference (id << 2). */
export type Elem = number;

export const END = -1;
export const isTerm = (e: Elem): boolean => (e & 1) === 1;
export const startsCodePoint = (e: Elem): boolean => (e & 2) === 2;

/** A grammar ready to run: alternatives laid out flat, each ended by END. */
export interface Cfg {
  /** Elements; an alternative is a run ending in END. */
  readonly elems: Int32Array;
  /** Rule r's alternatives start at elems[alts[k]] for k in altIndex[r] .. altIndex[r + 1]. */
  readonly alts: Int32Array;
  readonly altIndex: Int32Array;
  /** 256-bit byte sets, 8 words per terminal. */
  readonly termBits: Uint32Array;
  readonly root: number;
  readonly ruleNames: readonly string[];
}

/** Most rules one grammar may have (a repetition count makes one rule per optional copy). */
const MAX_RULES = 100_000;

const ESCAPES: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t' };

export class CfgBuilder {
  private readonly rules: Elem[][][] = [];
  private readonly names: string[] = [];
  private readonly defined: boolean[] = [];
  private readonly terms: Uint32Array[] = [];
  private readonly termIds = new Map<string, number>();
  private readonly classes = new Map<string, Elem>();
  private readonly continuations: Elem[] = [];

  /** Where a rule is defined, for error messages (GBNF: its line and column). */
  locate: (rule: number) => string = (r) => `rule '${this.names[r]}'`;

  /** `what` starts error messages (`pattern "…"`, `GBNF`). */
  constructor(readonly what: string) {}

  /** A new rule with no alternatives yet (fill it with define). */
  declare(name: string): number {
    if (this.rules.length >= MAX_RULES) throw new SchemaError(`${this.what}: too large (over ${MAX_RULES} rules)`);
    this.rules.push([]);
    this.names.push(name);
    this.defined.push(false);
    return this.rules.length - 1;
  }

  define(rule: number, alts: Elem[][]): void {
    this.rules[rule] = alts;
    this.defined[rule] = true;
  }

  isDefined(rule: number): boolean {
    return this.defined[rule];
  }

  ref(rule: number): Elem {
    return rule << 2;
  }

  /** A new rule with these alternatives, referenced. */
  rule(alts: Elem[][], name = ''): Elem {
    const r = this.declare(name || `_${this.rules.length}`);
    this.define(r, alts);
    return this.ref(r);
  }

  /** One element standing for the alternatives (no new rule for a single element). */
  group(alts: Elem[][]): Elem {
    if (alts.length === 1 && alts[0].length === 1) return alts[0][0];
    return this.rule(alts);
  }

  /** A terminal: one byte from the set. */
  term(bytes: Iterable<number>, startsCp: boolean): Elem {
    const bits = new Uint32Array(8);
    for (const b of bytes) bits[b >> 5] |= 1 << (b & 31);
    const key = bits.join(',');
    let id = this.termIds.get(key);
    if (id === undefined) {
      id = this.terms.length;
      this.terms.push(bits);
      this.termIds.set(key, id);
    }
    return (id << 2) | 1 | (startsCp ? 2 : 0);
  }

  byteRange(lo: number, hi: number, startsCp: boolean): Elem {
    const bytes: number[] = [];
    for (let b = lo; b <= hi; b++) bytes.push(b);
    return this.term(bytes, startsCp);
  }

  /** `body` min..max times (max -1: unbounded), as elements to splice into a sequence. */
  repeat(body: Elem[], min: number, max: number): Elem[] {
    const item = this.group([body]);
    const out: Elem[] = new Array<Elem>(min).fill(item);
    if (max < 0) {
      // star ::= item star | ε (the recursion is a tail call: the stack does not grow)
      const star = this.declare(`_${this.rules.length}*`);
      this.define(star, [[item, this.ref(star)], []]);
      out.push(this.ref(star));
    } else if (max > min) {
      // opt_k ::= item opt_{k+1} | ε, nested so that at most max - min more copies follow.
      let tail: Elem | null = null;
      for (let i = max - min; i > 0; i--) tail = this.rule([tail === null ? [item] : [item, tail], []]);
      out.push(tail!);
    }
    return out;
  }

  /** One code point of `set`, spelled as `mode` says. */
  codePoints(set: CodePoints, mode: TextMode): Elem {
    const key = `${mode}:${set.map(([a, b]) => `${a}-${b}`).join(',')}`;
    const known = this.classes.get(key);
    if (known !== undefined) return known;
    const alts: Elem[][] = [];
    let raw = set;
    if (mode === 'json') {
      // Controls, `"` and `\` only in their escaped form, as JSON.stringify writes them.
      raw = subtract(set, [
        [0, 0x1f],
        [0x22, 0x22],
        [0x5c, 0x5c],
      ]);
      const escaped = this.escapes(set);
      if (escaped) alts.push(escaped);
    }
    // ASCII in one terminal; longer encodings as byte-range sequences.
    const ascii: number[] = [];
    for (const [a, b] of raw) {
      for (let c = a; c <= Math.min(b, 0x7f); c++) ascii.push(c);
      if (b < 0x80) continue;
      for (const seq of utf8Sequences(Math.max(a, 0x80), b)) alts.push(this.utf8Seq(seq));
    }
    if (ascii.length > 0) alts.unshift([this.term(ascii, true)]);
    const elem = alts.length === 0 ? this.rule([], '(nothing)') : this.group(alts);
    this.classes.set(key, elem);
    return elem;
  }

  /**
   * A UTF-8 byte-range sequence; trailing full continuation ranges ([80-BF]) are one shared rule
   * per count, so that every character's last bytes lead to the same parser state.
   */
  private utf8Seq(seq: [number, number][]): Elem[] {
    let full = 0;
    while (full < seq.length - 1 && seq[seq.length - 1 - full][0] === 0x80 && seq[seq.length - 1 - full][1] === 0xbf) full++;
    const head = seq.slice(0, seq.length - full).map(([x, y], i) => this.byteRange(x, y, i === 0));
    return full === 0 ? head : [...head, this.continuationRule(full)];
  }

  /** n continuation bytes ([80-BF]), one rule per n. */
  private continuationRule(n: number): Elem {
    let r = this.continuations[n];
    if (r === undefined) {
      const cont = this.byteRange(0x80, 0xbf, false);
      r = this.rule([n === 1 ? [cont] : [cont, this.continuationRule(n - 1)]], `(${n} continuation bytes)`);
      this.continuations[n] = r;
    }
    return r;
  }

  /**
   * The escaped code points of `set` (controls, `"`, `\`) as JSON writes them, factored as a trie
   * (`\` then the short letter, or `u00` and two hex digits) so that escapes share parser states.
   */
  private escapes(set: CodePoints): Elem[] | null {
    const short: number[] = [];
    const long: [number[], number[]] = [[], []];
    for (const [a, b] of set) {
      for (let c = a; c <= Math.min(b, 0x5c); c++) {
        if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
        if (ESCAPES[c]) short.push(ESCAPES[c].charCodeAt(1));
        else long[c >> 4].push('0123456789abcdef'.charCodeAt(c & 15));
      }
    }
    const after: Elem[][] = [];
    if (short.length > 0) after.push([this.term(short, false)]);
    const hex: Elem[][] = [];
    long.forEach((lows, high) => {
      if (lows.length > 0) hex.push([this.term([0x30 + high], false), this.term(lows, false)]);
    });
    if (hex.length > 0) after.push([...[0x75, 0x30, 0x30].map((c) => this.term([c], false)), this.group(hex)]);
    if (after.length === 0) return null;
    return [this.term([0x5c], true), this.group(after)];
  }

  /** The text's code points in sequence. */
  literal(text: string, mode: TextMode): Elem[] {
    return [...text].map((ch) => {
      const c = ch.codePointAt(0)!;
      return this.codePoints([[c, c]], mode);
    });
  }

  /**
   * The grammar from `root`. Alternatives that can never complete are dropped; `strict` makes an
   * undefined or never-completing rule an error instead (GBNF, where it is a mistake). Left
   * recursion (a rule that can reach itself before consuming a byte, other than as its last
   * element) is an error: the parser would grow its stack without reading.
   */
  build(root: number, strict: boolean): Cfg {
    const n = this.rules.length;
    for (let r = 0; r < n; r++) if (!this.defined[r]) throw new SchemaError(`${this.what} ${this.locate(r)} is not defined`);
    const productive = this.productiveRules();
    const reachable = this.reachableFrom(root);
    // Name the rule at fault: one that never completes other than the root, when there is one.
    const stuck = [...Array(n).keys()]
      .filter((r) => reachable[r] && !productive[r])
      .sort((a, b) => Number(a === root) - Number(b === root));
    if (stuck.length > 0 && (strict || !productive[root])) {
      if (!strict) throw new SchemaError(`${this.what} matches nothing`);
      throw new SchemaError(`${this.what} ${this.locate(stuck[0])} can never complete (it matches no finite text)`);
    }
    const alive = (alt: Elem[]) => alt.every((e) => isTerm(e) || productive[e >> 2]);
    const rules = this.rules.map((alts) => alts.filter(alive));
    this.checkLeftRecursion(rules, reachable);

    const elems: number[] = [];
    const alts: number[] = [];
    const altIndex = new Int32Array(n + 1);
    rules.forEach((ruleAlts, r) => {
      altIndex[r] = alts.length;
      for (const alt of ruleAlts) {
        alts.push(elems.length);
        elems.push(...alt, END);
      }
    });
    altIndex[n] = alts.length;
    const termBits = new Uint32Array(this.terms.length * 8);
    this.terms.forEach((t, i) => termBits.set(t, i * 8));
    return { elems: Int32Array.from(elems), alts: Int32Array.from(alts), altIndex, termBits, root, ruleNames: this.names };
  }

  /** Rules that derive some finite byte string (a fixed point from the rules whose alternatives hold terminals only). */
  private productiveRules(): boolean[] {
    const productive = new Array<boolean>(this.rules.length).fill(false);
    for (let changed = true; changed;) {
      changed = false;
      this.rules.forEach((alts, r) => {
        if (productive[r]) return;
        if (alts.some((alt) => alt.every((e) => isTerm(e) || productive[e >> 2]))) productive[r] = changed = true;
      });
    }
    return productive;
  }

  private reachableFrom(root: number): boolean[] {
    const seen = new Array<boolean>(this.rules.length).fill(false);
    const todo = [root];
    seen[root] = true;
    while (todo.length > 0) {
      for (const alt of this.rules[todo.pop()!]) {
        for (const e of alt) {
          if (isTerm(e) || seen[e >> 2]) continue;
          seen[e >> 2] = true;
          todo.push(e >> 2);
        }
      }
    }
    return seen;
  }

  /**
   * Left-corner edges A → B (B reachable in A before any byte); a cycle through an edge where B is
   * not the alternative's last element grows the parse stack forever. (A cycle of last-element
   * edges only is a loop the parser's closure stops by itself.)
   */
  private checkLeftRecursion(rules: Elem[][][], reachable: boolean[]): void {
    const nullable = this.nullableRules(rules);
    const edges: [to: number, growing: boolean][][] = rules.map(() => []);
    rules.forEach((alts, a) => {
      for (const alt of alts) {
        for (let i = 0; i < alt.length; i++) {
          const e = alt[i];
          if (isTerm(e)) break;
          edges[a].push([e >> 2, i < alt.length - 1]);
          if (!nullable[e >> 2]) break;
        }
      }
    });
    const comp = stronglyConnected(edges.map((es) => es.map(([to]) => to)));
    edges.forEach((es, a) => {
      if (!reachable[a]) return;
      for (const [b, growing] of es) {
        if (growing && comp[a] === comp[b])
          throw new SchemaError(`${this.what} ${this.locate(a)} is left-recursive (write it as a repetition: x ::= y ("," y)*)`);
      }
    });
  }

  private nullableRules(rules: Elem[][][]): boolean[] {
    const nullable = new Array<boolean>(rules.length).fill(false);
    for (let changed = true; changed;) {
      changed = false;
      rules.forEach((alts, r) => {
        if (nullable[r]) return;
        if (alts.some((alt) => alt.every((e) => !isTerm(e) && nullable[e >> 2]))) nullable[r] = changed = true;
      });
    }
    return nullable;
  }
}

/** Ranges of `set` not in `minus` (both sorted). */
export function subtract(set: CodePoints, minus: CodePoints): CodePoints {
  const out: CodePoints = [];
  for (const [a0, b] of set) {
    let a = a0;
    for (const [x, y] of minus) {
      if (y < a || x > b) continue;
      if (x > a) out.push([a, x - 1]);
      a = Math.max(a, y + 1);
    }
    if (a <= b) out.push([a, b]);
  }
  return out;
}

/** Ranges sorted and merged. */
export function normalize(set: CodePoints): CodePoints {
  const sorted = [...set].filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: CodePoints = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** Tarjan's strongly connected components, iteratively: the component id of each vertex. */
function stronglyConnected(adj: number[][]): Int32Array {
  const n = adj.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const comp = new Int32Array(n).fill(-1);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  let counter = 0;
  let comps = 0;
  for (let s = 0; s < n; s++) {
    if (index[s] >= 0) continue;
    const work: [v: number, edge: number][] = [[s, 0]];
    index[s] = low[s] = counter++;
    stack.push(s);
    onStack[s] = 1;
    while (work.length > 0) {
      const top = work[work.length - 1];
      const v = top[0];
      if (top[1] < adj[v].length) {
        const w = adj[v][top[1]++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = 1;
          work.push([w, 0]);
        } else if (onStack[w]) {
          low[v] = Math.min(low[v], index[w]);
        }
        continue;
      }
      work.pop();
      if (work.length > 0) low[work[work.length - 1][0]] = Math.min(low[work[work.length - 1][0]], low[v]);
      if (low[v] === index[v]) {
        for (;;) {
          const w = stack.pop()!;
          onStack[w] = 0;
          comp[w] = comps;
          if (w === v) break;
        }
        comps++;
      }
    }
  }
  return comp;
}
