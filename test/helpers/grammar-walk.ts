// Byte-level driving of a grammar: whether a text is accepted, and seeded random walks through the
// matcher (every step picks among the bytes the matcher allows), for conformance tests that check
// each finished output with an independent validator (Ajv, JavaScript's RegExp).
import { compileIR, type GrammarIR } from '../../src/engine/grammar/index.js';
import { feed } from '../../src/engine/grammar/matcher.js';
import { END, enter, EOS, seq, type Frame, type GNode } from '../../src/engine/grammar/nodes.js';
import { frameKey } from '../../src/engine/grammar/token-mask.js';
import { Rng } from '../../src/engine/sampler.js';

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The grammar's node followed by the end of output. */
export function ended(ir: GrammarIR): GNode {
  return seq([compileIR(ir), END]);
}

/** Whether the whole text (then the end of output) is accepted. */
export function accepts(node: GNode, text: string | Uint8Array): boolean {
  let st: Frame | null = enter(node, null);
  for (const b of typeof text === 'string' ? utf8.encode(text) : text) {
    st = feed(st, b);
    if (st === null) return false;
  }
  return feed(st, EOS) !== null;
}

/** The whole state as a string: every frame's key, top to bottom. */
function stateKey(f: Frame | null): string {
  let key = '';
  for (; f !== null; f = f.up) key += `${frameKey(f, 0)}|`;
  return key;
}

/** The bytes of a shortest way from `start` to where the output may end (breadth-first), or null past `budget` states. */
export function shortestCompletion(start: Frame, budget: number): number[] | null {
  const seen = new Set([stateKey(start)]);
  let level: [Frame, number[]][] = [[start, []]];
  while (level.length > 0 && seen.size < budget) {
    const next: [Frame, number[]][] = [];
    for (const [st, path] of level) {
      if (feed(st, EOS) !== null) return path;
      for (let b = 0; b < 256; b++) {
        const to = feed(st, b);
        if (to === null) continue;
        const key = stateKey(to);
        if (seen.has(key)) continue;
        seen.add(key);
        next.push([to, [...path, b]]);
      }
    }
    level = next;
  }
  return null;
}

export interface WalkOptions {
  /** Past this many bytes the walk takes a shortest way to the end. */
  softLength: number;
  /** Chance to end wherever the output may end. */
  stopChance: number;
  /** Chance to pick an ASCII byte when one is allowed (else any allowed byte, uniformly). */
  asciiBias?: number;
}

/** Bytes that tend to finish a value: preferred past the soft length when no short way to the end was found. */
const CLOSERS = [0x22, 0x7d, 0x5d, 0x29];

/**
 * A random walk from `node`: the text (valid UTF-8 by construction) once the output may end and
 * the walk chooses to. At softLength bytes it looks for a shortest way to the end and takes it;
 * failing that it prefers closing bytes; null past 4 × softLength bytes.
 */
export function randomWalk(node: GNode, rng: Rng, opts: WalkOptions): string | null {
  let st = enter(node, null);
  const out: number[] = [];
  const allowed: number[] = [];
  const ascii: number[] = [];
  for (;;) {
    const canEnd = feed(st, EOS) !== null;
    if (canEnd && rng.next() < opts.stopChance) return strictUtf8.decode(Uint8Array.from(out));
    const long = out.length > opts.softLength;
    if (out.length === opts.softLength + 1) {
      const rest = shortestCompletion(st, 1000);
      if (rest !== null) return strictUtf8.decode(Uint8Array.from([...out, ...rest]));
    }
    if (canEnd && long) return strictUtf8.decode(Uint8Array.from(out));
    if (out.length > 4 * opts.softLength) return null;
    allowed.length = ascii.length = 0;
    for (let b = 0; b < 256; b++) {
      if (feed(st, b) === null) continue;
      allowed.push(b);
      if (b >= 0x20 && b < 0x7f) ascii.push(b);
    }
    if (allowed.length === 0 && canEnd) return strictUtf8.decode(Uint8Array.from(out));
    if (allowed.length === 0) throw new Error(`dead end after ${JSON.stringify(new TextDecoder().decode(Uint8Array.from(out)))}`);
    const from = ascii.length > 0 && rng.next() < (opts.asciiBias ?? 0.7) ? ascii : allowed;
    const b = (long ? CLOSERS.find((c) => allowed.includes(c)) : undefined) ?? from[Math.floor(rng.next() * from.length)];
    st = feed(st, b)!;
    out.push(b);
  }
}

export { Rng };
