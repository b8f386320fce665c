// Strings and numbers of a JSON schema, as descriptions that union exactly (anyOf of two patterns,
// an enum next to a bounded integer) and then as nodes:
//   - a string is any of some texts (patterns, formats, enum values) with lo..hi code points;
//   - a number is any of some ranges (integers or not, bounds exact) or literal numbers.
// The nodes: JSON strings with a grammar body (cfg-machine.ts) or a counted body, numbers as
// regexes over their digits (number-ranges.ts); unconstrained ones are the shared string and
// number nodes.

import { CountTable } from './cfg-counts.js';
import { SchemaError } from './errors.js';
import { numberRangeRegex, type NumberBounds } from './number-ranges.js';
import { cfgNode, countedString, FREE_STRING, INTEGER_NUMBER, lit, NUMBER, seq, type GNode } from './nodes.js';
import { regexUnionMachine, simpleRepeat, type PatternSpec } from './regex.js';
import { formatBody, formatPattern } from './string-formats.js';

/** Strings: any of `texts` (null: any text), lo..hi code points (hi -1: no limit). */
export interface StringSpec {
  texts: TextAlt[] | null;
  lo: number;
  hi: number;
}

/** One kind of text: a pattern (JSON Schema's unanchored semantics unless `anchored`) or a format. */
export type TextAlt = PatternSpec & { format?: string };

/** Numbers: any of these ranges or literal texts. */
export type NumberSpec = ({ range: NumberBounds } | { text: string })[];

export const ANY_STRING: StringSpec = { texts: null, lo: 0, hi: -1 };
export const ANY_NUMBER: NumberSpec = [{ range: { integer: false, min: null, max: null, exclusiveMin: false, exclusiveMax: false } }];
export const ANY_INTEGER: NumberSpec = [{ range: { integer: true, min: null, max: null, exclusiveMin: false, exclusiveMax: false } }];

const unbounded = (b: NumberBounds) => b.min === null && b.max === null;
export const isAnyString = (s: StringSpec): boolean => s.texts === null && s.lo === 0 && s.hi < 0;
export const isAnyNumber = (n: NumberSpec): boolean => n.some((a) => 'range' in a && !a.range.integer && unbounded(a.range));
/** Every integer (and maybe more): any integer text converts to a valid value. */
export const hasAnyInteger = (n: NumberSpec): boolean => n.some((a) => 'range' in a && unbounded(a.range));

/** A string schema's spec: its pattern, format and length bounds. */
export function stringSpec(pattern: string | undefined, format: string | undefined, lo: number, hi: number, path: string): StringSpec {
  const texts: TextAlt[] = [];
  if (format !== undefined) {
    const def = formatPattern(format);
    if (!def) throw new SchemaError(`unsupported format '${format}' at ${path}`);
    if (def.maxLength !== undefined) hi = hi < 0 ? def.maxLength : Math.min(hi, def.maxLength);
    texts.push({ pattern: def.pattern, anchored: true, ignoreCase: def.ignoreCase, format });
  }
  if (pattern !== undefined) {
    if (texts.length > 0) throw new SchemaError(`unsupported at ${path}: 'pattern' together with 'format'`);
    texts.push({ pattern, anchored: false });
  }
  if (hi >= 0 && lo > hi) throw new SchemaError(`unsatisfiable schema at ${path}: minLength ${lo} > maxLength ${hi}`);
  return { texts: texts.length > 0 ? texts : null, lo, hi };
}

/**
 * Both specs' strings; exact when their length bounds agree (or the differing bounds belong to a
 * spec without patterns and are small enough to spell as one), otherwise the looser bounds.
 */
export function unionStrings(x: StringSpec | null, y: StringSpec | null): StringSpec | null {
  if (x === null || y === null) return x ?? y;
  let [a, b] = [x, y];
  if (a.lo !== b.lo || a.hi !== b.hi) [a, b] = [spellBounds(a), spellBounds(b)];
  const texts = a.texts === null || b.texts === null ? null : [...a.texts, ...b.texts];
  return { texts, lo: Math.min(a.lo, b.lo), hi: a.hi < 0 || b.hi < 0 ? -1 : Math.max(a.hi, b.hi) };
}

/** Most characters a length bound may have to be spelled as a pattern (each is a few parser states). */
const SPELL_LENGTH = 64;

/** Length bounds without a pattern as the pattern `^[\s\S]{lo,hi}$`, where small enough. */
function spellBounds(s: StringSpec): StringSpec {
  if (s.texts !== null || (s.lo === 0 && s.hi < 0) || Math.max(s.lo, s.hi) > SPELL_LENGTH) return s;
  return { texts: [{ pattern: `^[\\s\\S]{${s.lo},${s.hi < 0 ? '' : s.hi}}$`, anchored: false }], lo: 0, hi: -1 };
}

/** The spec with one more exact string (an enum value); null when its length is outside the spec's bounds. */
export function withString(spec: StringSpec, value: string): StringSpec | null {
  if (spec.texts === null) return spec; // any text already
  const n = [...value].length;
  if (n < spec.lo || (spec.hi >= 0 && n > spec.hi)) return null;
  return { ...spec, texts: [...spec.texts, { pattern: escapeRegex(value), anchored: true }] };
}

export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

/**
 * The node of a JSON string in the spec: the shared free string, a counted string, a format's
 * shared body, or the union of the patterns (with a count table when bounded).
 */
export function jsonStringNode(spec: StringSpec, path: string): GNode {
  if (spec.texts === null) return spec.lo === 0 && spec.hi < 0 ? FREE_STRING : countedString(spec.lo, spec.hi);
  const quote = lit('"');
  const [only] = spec.texts;
  if (spec.texts.length === 1 && only.format !== undefined && spec.lo === 0 && formatPattern(only.format)!.maxLength === spec.hi)
    return seq([quote, formatBody(only.format), quote]);
  if (spec.texts.length === 1 && spec.hi === -1 && spec.lo === 0)
    return seq([quote, cfgNode(regexUnionMachine(spec.texts, 'json')), quote]);
  // `^x{m,n}$` with a single character x: x* with the bounds counted rather than spelled out.
  let texts = spec.texts;
  let { lo, hi } = spec;
  const rep = texts.length === 1 ? simpleRepeat(texts[0]) : null;
  if (rep) {
    texts = [rep.star];
    lo = Math.max(lo, rep.min);
    hi = rep.max < 0 ? hi : hi < 0 ? rep.max : Math.min(hi, rep.max);
    if (hi >= 0 && lo > hi)
      throw new SchemaError(`unsatisfiable schema at ${path}: the pattern's length and minLength/maxLength exclude each other`);
  }
  const machine = regexUnionMachine(texts, 'json');
  const counts = lo === 0 && hi < 0 ? null : new CountTable(machine, lo, hi, `the string at ${path}`);
  if (counts && !counts.isLive(machine.start, 0))
    throw new SchemaError(`unsatisfiable schema at ${path}: no string matches the pattern within minLength/maxLength`);
  return seq([quote, cfgNode(machine, counts), quote]);
}

/** The node of a number in the spec; null when the spec admits none. */
export function numberNode(spec: NumberSpec): GNode | null {
  if (spec.length === 0) return null;
  if (isAnyNumber(spec)) return NUMBER;
  const integersOnly = spec.every((a) => ('text' in a ? /^-?\d+$/.test(a.text) : true));
  if (hasAnyInteger(spec) && integersOnly) return INTEGER_NUMBER;
  const parts: string[] = [];
  for (const a of spec) {
    if ('text' in a) parts.push(escapeRegex(a.text));
    else if (unbounded(a.range)) parts.push('-?(?:0|[1-9]\\d{0,15})');
    else {
      const r = numberRangeRegex(a.range);
      if (r !== null) parts.push(r);
    }
  }
  if (parts.length === 0) return null;
  return cfgNode(regexUnionMachine([{ pattern: parts.map((p) => `(?:${p})`).join('|'), anchored: true }], 'raw'));
}
