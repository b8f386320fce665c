// The grammar graph and the matcher's state.
//
// A grammar is a graph of GNodes (literal text, bounded whitespace, sequences, first-byte choices,
// JSON strings/numbers/objects/arrays, …). The matcher's state is an immutable stack of Frames —
// one per node being matched, each with a few integers of progress — linked through `up`, so
// forking a state for every branch of the vocabulary trie costs one small allocation, and a
// state can be kept or dropped freely (speculative drafts, rollback).
//
// All nodes are one class with one field layout, so the matcher's hot loop sees a single hidden
// class; `kind` says which fields mean something.

import type { CountTable } from './cfg-counts.js';
import type { CfgMachine } from './cfg-machine.js';
import { GrammarError } from './errors.js';
import { LiteralTrie, MarkerDfa } from './literals.js';
import { regexMachine } from './regex.js';

export const enum Kind {
  /** Exact bytes. s = bytes matched. */
  Lit,
  /** 0..max JSON whitespace bytes. s = count. */
  Ws,
  /** kids in order. s = index of the next kid. */
  Seq,
  /** kids[b] is the node that starts with byte b (257 entries; 256 = end of output). */
  Alt,
  /** One of trie's literals; kids[i] (or nothing) follows literal i. k = trie node. */
  Switch,
  /** Any bytes until one of dfa's end markers; a forbidden marker rejects. s = dfa state. */
  Until,
  /**
   * A quoted string: JSON (`"`, JSON escapes) or Python (min = the quote byte; flags & PY_ESCAPES).
   * s = sub-state; with a dfa, k = its state (the raw text must not contain a marker). COUNTED:
   * lo..hi code points (hi -1: no limit), m = code points so far (capped at lo without hi).
   */
  Str,
  /** A JSON number; flags & INTEGER for integers. s = phase | digits << 4. */
  Num,
  /**
   * An object: keys from trie, values kids[i]; FREE_KEYS: keys kids[1] (default a JSON string),
   * values kids[0]. bytes = the open and close bytes (`{}`, or `()` for Python keyword arguments);
   * KEY_HAS_COLON: each key literal (or free key) includes its `:`/`=`; NO_OPEN: the open byte was
   * already matched (by a tool-name literal), so matching starts after it.
   */
  Obj,
  /** XML-ish parameters (fam1, fam4_xml, glm4): opening tags from trie (literal 0 is the closing tag), values kids[i]. */
  XmlObj,
  /**
   * A JSON array of min..max items (max -1 = unbounded): item i matches kids[i + 1] while there is
   * one (prefixItems), else kids[0]. k = items so far (capped).
   */
  Arr,
  /**
   * Text of a byte-level context-free grammar (regexes, GBNF; cfg-machine.ts): s = its state.
   * With `counts`, lo..hi code points, m = code points so far. Greedy: a byte the grammar cannot
   * take, where it may end, pops the frame and goes to the parent.
   */
  Cfg,
  /** Accepts only the end of output. */
  End,
  /** Matched everything: nothing more is accepted. */
  Accepted,
  /** Stands below a frame whose mask is being cached: reaching it means the frame popped. */
  Hole,
  /** What feeding a byte to the Hole returns. */
  HoleFed,
}

export const INTEGER = 1;
export const FREE_KEYS = 2;
export const KEY_HAS_COLON = 4;
export const NO_OPEN = 8;
/** Str: Python escapes (\\ \' \" \n \r \t \xHH \uHHHH) instead of JSON's. */
export const PY_ESCAPES = 16;
/** Obj: keys besides the listed ones (additionalProperties), written as JSON.stringify would, values the last kid. */
export const EXTRA_KEYS = 64;
/** Str: lo..hi code points (\u escapes of surrogates are not allowed: they would miscount). */
export const COUNTED = 32;
/** The pseudo-byte for end of output (an end-of-turn token). */
export const EOS = 256;

/** Whitespace allowed in one gap of JSON (between two of its tokens). Bounded so a model cannot idle forever. */
export const JSON_WS = 16;
/** Whitespace allowed around the tags of a tool-call format (`\n` after `<tool_call>`, `\n\n` after `</think>`). */
export const TAG_WS = 4;

let nextId = 1;

export class GNode {
  readonly id = nextId++;
  bytes: Uint8Array = EMPTY_BYTES;
  max = 0;
  min = 0;
  kids: (GNode | null)[] = [];
  trie: LiteralTrie | null = null;
  dfa: MarkerDfa | null = null;
  /** literalBit of each required key. */
  required = 0;
  flags = 0;
  /** Length bounds in code points (Str with COUNTED; Cfg with counts); hi -1: none. */
  lo = 0;
  hi = -1;
  cfg: CfgMachine | null = null;
  counts: CountTable | null = null;

  constructor(
    readonly kind: Kind,
    /** Built once per process and used by every grammar: its masks are cached per vocabulary. */
    readonly shared = false,
  ) {}
}

const EMPTY_BYTES = new Uint8Array(0);

export class Frame {
  constructor(
    readonly node: GNode,
    readonly s: number,
    readonly k: number,
    readonly m: number,
    readonly up: Frame | null,
  ) {}
}

/** A fresh frame for `node` on top of `up`. */
export function enter(node: GNode, up: Frame | null): Frame {
  return new Frame(node, 0, 0, 0, up);
}

// ---------------------------------------------------------------------------------------------
// Node constructors

const utf8 = new TextEncoder();

export function lit(text: string): GNode {
  const n = new GNode(Kind.Lit);
  n.bytes = utf8.encode(text);
  if (n.bytes.length === 0) throw new GrammarError('grammar: empty literal');
  return n;
}

export function ws(max: number, shared = false): GNode {
  const n = new GNode(Kind.Ws, shared);
  n.max = max;
  return n;
}

export function seq(kids: GNode[]): GNode {
  const n = new GNode(Kind.Seq);
  n.kids = kids;
  return n;
}

/** A choice by first byte; fill in `kids` with altSet. */
export function alt(shared = false): GNode {
  const n = new GNode(Kind.Alt, shared);
  n.kids = new Array<GNode | null>(EOS + 1).fill(null);
  return n;
}

export function altSet(n: GNode, firstBytes: string | number[], to: GNode): void {
  const bytes = typeof firstBytes === 'string' ? [...utf8.encode(firstBytes)] : firstBytes;
  for (const b of bytes) {
    if (n.kids[b] && n.kids[b] !== to) throw new GrammarError(`grammar: two choices start with byte ${b}`);
    n.kids[b] = to;
  }
}

/**
 * One of `literals`, each followed by its continuation (null: nothing). A literal may be a prefix
 * of another only when it has no continuation (JSON numbers such as 1 and 12).
 */
export function literalSwitch(literals: readonly string[], conts: readonly (GNode | null)[] | null = null, shared = false): GNode {
  const n = new GNode(Kind.Switch, shared);
  n.trie = new LiteralTrie(literals);
  n.kids = conts ? [...conts] : literals.map(() => null);
  for (let i = 0; i < n.trie.term.length; i++) {
    const t = n.trie.term[i];
    if (t >= 0 && n.trie.hasKids[i] && n.kids[t])
      throw new GrammarError(`grammar: literal ${JSON.stringify(literals[t])} is a prefix of another`);
  }
  return n;
}

export function until(dfa: MarkerDfa, shared = false): GNode {
  const n = new GNode(Kind.Until, shared);
  n.dfa = dfa;
  return n;
}

const CURLY = Uint8Array.of(0x7b, 0x7d);

/** A JSON object with these keys; with `extra`, any other key too, its values `extra`. */
export function jsonObject(keys: readonly string[], values: GNode[], requiredBits: number, extra: GNode | null = null): GNode {
  const n = objectNode(
    keys.map((k) => JSON.stringify(k)),
    extra ? [...values, extra] : values,
    requiredBits,
  );
  if (extra) n.flags |= EXTRA_KEYS;
  return n;
}

export interface ObjectSyntax {
  /** Open and close characters (default `{` `}`). */
  open?: string;
  close?: string;
  /** The key literals include their separator (`key:`, `key=`); else `:` follows with optional whitespace. */
  keyHasColon?: boolean;
}

/**
 * An object whose keys are spelled by `keyLiterals` (already quoted as the syntax wants; no
 * literal may prefix another), values kids[i], required keys' seenBits in `requiredBits`.
 */
export function objectNode(keyLiterals: readonly string[], values: GNode[], requiredBits: number, syntax: ObjectSyntax = {}): GNode {
  const n = new GNode(Kind.Obj);
  n.trie = new LiteralTrie(keyLiterals);
  if (!n.trie.prefixFree) throw new GrammarError('grammar: an object key is a prefix of another');
  n.kids = values;
  n.required = requiredBits;
  setObjectSyntax(n, syntax);
  return n;
}

/**
 * An object with any keys whose values all match `value` (set kids[0] later for cycles); keys
 * match `key` (default: a JSON string).
 */
export function freeObject(value: GNode | null, shared = false, key: GNode | null = null, syntax: ObjectSyntax = {}): GNode {
  const n = new GNode(Kind.Obj, shared);
  n.flags = FREE_KEYS;
  n.kids = key ? [value, key] : [value];
  setObjectSyntax(n, syntax);
  return n;
}

function setObjectSyntax(n: GNode, syntax: ObjectSyntax): void {
  const open = syntax.open ?? '{';
  const close = syntax.close ?? '}';
  if (open.length !== 1 || close.length !== 1 || open.charCodeAt(0) > 0x7f || close.charCodeAt(0) > 0x7f)
    throw new GrammarError('grammar: object brackets must be ASCII characters');
  n.bytes = open === '{' && close === '}' ? CURLY : Uint8Array.of(open.charCodeAt(0), close.charCodeAt(0));
  if (syntax.keyHasColon) n.flags |= KEY_HAS_COLON;
}

/**
 * The same object (or the object branch of a value choice) with its opening bracket already
 * matched: for a tool-name literal that ends in `{` or `(` (which keeps names prefix-free).
 */
export function opened(node: GNode): GNode {
  const obj = node.kind === Kind.Alt ? (node.kids[0x7b] ?? null) : node;
  if (obj === null || obj.kind !== Kind.Obj) throw new GrammarError('grammar: the arguments are not an object');
  const n = new GNode(Kind.Obj);
  n.bytes = obj.bytes;
  n.kids = obj.kids;
  n.trie = obj.trie;
  n.required = obj.required;
  n.flags = obj.flags | NO_OPEN;
  return n;
}

/**
 * A JSON string whose raw text (escapes as written) never contains one of `dfa`'s markers: for
 * JSON inside a tag-delimited value, which its parser ends at the first closing tag.
 */
export function guardedString(dfa: MarkerDfa, shared = false): GNode {
  const n = new GNode(Kind.Str, shared);
  n.dfa = dfa;
  return n;
}

/** A JSON string of lo..hi code points (hi -1: no upper bound). */
export function countedString(lo: number, hi: number, shared = false): GNode {
  const n = new GNode(Kind.Str, shared);
  n.flags = COUNTED;
  n.lo = lo;
  n.hi = hi;
  return n;
}

/**
 * Text of a grammar (its machine), optionally lo..hi code points long (`counts`, whose bounds
 * they are). `shared`: built once per process (string formats).
 */
export function cfgNode(machine: CfgMachine, counts: CountTable | null = null, shared = false): GNode {
  const n = new GNode(Kind.Cfg, shared);
  n.cfg = machine;
  n.counts = counts;
  if (counts) {
    n.lo = counts.lo;
    n.hi = counts.hi;
  }
  return n;
}

/** A quoted string with Python escapes, `quote` being `'` or `"`. */
export function pythonString(quote: "'" | '"', shared = false): GNode {
  const n = new GNode(Kind.Str, shared);
  n.min = quote.charCodeAt(0);
  n.flags = PY_ESCAPES;
  return n;
}

/** Items 0..prefix.length - 1 match `prefix` (prefixItems), later ones `items`. */
export function jsonArray(items: GNode | null, minItems: number, maxItems: number, shared = false, prefix: GNode[] = []): GNode {
  const n = new GNode(Kind.Arr, shared);
  n.kids = [items, ...prefix];
  n.min = minItems;
  n.max = maxItems;
  return n;
}

/** fam1 parameters: literal 0 is `closeTag`, literal i + 1 opens key i. */
export function xmlParams(openTags: readonly string[], closeTag: string, values: GNode[], requiredBits: number): GNode {
  const n = new GNode(Kind.XmlObj);
  n.trie = new LiteralTrie([closeTag, ...openTags]);
  if (!n.trie.prefixFree) throw new GrammarError('grammar: a parameter tag is a prefix of another');
  n.kids = [null, ...values];
  n.required = requiredBits;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Shared nodes: the same for every grammar, so their token masks are cached once per vocabulary.

export const FREE_STRING = new GNode(Kind.Str, true);
export const NUMBER = new GNode(Kind.Num, true);
export const INTEGER_NUMBER = new GNode(Kind.Num, true);
INTEGER_NUMBER.flags = INTEGER;
export const END = new GNode(Kind.End, true);
/** The text of an object's extra key, after its opening quote: any string in JSON.stringify's spelling. */
export const EXTRA_KEY_BODY = cfgNode(regexMachine('[^]*', { mode: 'json', anchored: true }), null, true);
/**
 * A counted string with no limit: counted strings' masks are its masks (one walk per sub-state,
 * per vocabulary), each token's count kept, and cut to a string's bounds when applied.
 */
export const COUNTING_STRING = countedString(0, Number.MAX_SAFE_INTEGER, true);
export const JSON_GAP = ws(JSON_WS, true);
export const TAG_GAP = ws(TAG_WS, true);

/** Any JSON value. */
export const ANY_VALUE = alt(true);
export const ANY_OBJECT = freeObject(ANY_VALUE, true);
export const ANY_ARRAY = jsonArray(ANY_VALUE, 0, -1, true);
const KEYWORDS = literalSwitch(['true', 'false', 'null'], null, true);
altSet(ANY_VALUE, '"', FREE_STRING);
altSet(ANY_VALUE, '{', ANY_OBJECT);
altSet(ANY_VALUE, '[', ANY_ARRAY);
altSet(ANY_VALUE, '-0123456789', NUMBER);
altSet(ANY_VALUE, 'tfn', KEYWORDS);

export const ACCEPTED = new Frame(new GNode(Kind.Accepted, true), 0, 0, 0, null);
export const HOLE = new Frame(new GNode(Kind.Hole, true), 0, 0, 0, null);
export const HOLE_FED = new Frame(new GNode(Kind.HoleFed, true), 0, 0, 0, null);
