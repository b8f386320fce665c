// Regular expressions → byte-level grammars (cfg.ts), for JSON Schema `pattern`, string formats
// and the `regex` constraint. Parsed with regexpp (JavaScript syntax, as JSON Schema and Ajv use,
// with the `u` flag; patterns that are only valid without it are read without it).
//
// The subset (code-point semantics, as JavaScript's `u` flag):
//   literals and escapes (\n \t \/ \x41 \u0041 \u{1F600} …), `.` (any character but line
//   terminators), classes [a-z] and negated classes [^…], \d \w \s \D \W \S, groups (capturing,
//   non-capturing, named), alternation, * + ? {n} {n,} {n,m} (lazy forms match the same texts as
//   greedy ones), ^ at the start and $ at the end of the pattern (or of a top-level alternative).
//   Python's `(?P<name>…)` is read as `(?<name>…)`.
// Anything else is a SchemaError naming it: lookahead and lookbehind, backreferences, \b \B,
// Unicode property escapes \p{…}, inline modifiers, ^ or $ elsewhere, and repetition counts over
// MAX_REPEAT.
//
// Matching is of the whole text: `anchored` patterns (the `regex` constraint) as written; JSON
// Schema patterns are unanchored (a match anywhere in the string) unless they start with ^ / end
// with $, which is written as any text around the pattern. In `json` mode the text is a JSON
// string's body (cfg.ts TextMode): `"`, `\` and control characters appear only escaped.

import { RegExpParser, type AST } from '@eslint-community/regexpp';
import { CfgBuilder, normalize, subtract, type Cfg, type CodePoints, type Elem, type TextMode } from './cfg.js';
import { CfgMachine } from './cfg-machine.js';
import { SchemaError } from './errors.js';
import { MAX_CODE_POINT } from './utf8-ranges.js';

/** Largest repetition count a pattern may use (x{n,m}): each optional copy is a grammar rule. */
export const MAX_REPEAT = 10_000;
/** Most states a pattern's automaton may have (they are all worked out when it is compiled). */
export const MAX_REGEX_STATES = 20_000;

export interface RegexOptions {
  mode: TextMode;
  /** Whole-text semantics; otherwise JSON Schema's (unanchored unless ^ / $). */
  anchored: boolean;
  /** ASCII letters match either case (only the built-in format patterns use it). */
  ignoreCase?: boolean;
}

/** A pattern and how to read it (the text mode is the caller's). */
export type PatternSpec = Omit<RegexOptions, 'mode'> & { pattern: string };

const ANY: CodePoints = [[0, MAX_CODE_POINT]];
const LINE_TERMINATORS: CodePoints = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const DIGIT: CodePoints = [[0x30, 0x39]];
const WORD: CodePoints = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: CodePoints = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);

/** The pattern's automaton, every state worked out (SchemaError when the pattern is outside the subset or too large). */
export function regexMachine(pattern: string, options: RegexOptions): CfgMachine {
  return regexUnionMachine([{ ...options, pattern }], options.mode);
}

/** The automaton of text matching any of the patterns, every state worked out. */
export function regexUnionMachine(patterns: readonly PatternSpec[], mode: TextMode): CfgMachine {
  const what =
    patterns.length === 1 ? `pattern ${show(patterns[0].pattern)}` : `patterns ${patterns.map((p) => show(p.pattern)).join(' | ')}`;
  const machine = new CfgMachine(regexCfg(patterns, mode, what), MAX_REGEX_STATES, what);
  machine.explore();
  return machine;
}

/** The grammar of the texts any of the patterns match. */
export function regexCfg(patterns: readonly PatternSpec[], mode: TextMode, what: string): Cfg {
  const b = new CfgBuilder(what);
  const root = b.declare('pattern');
  b.define(
    root,
    patterns.flatMap((p) => new RegexCompiler(b, p.pattern, { ...p, mode }).compile(parse(p.pattern))),
  );
  return b.build(root, false);
}

/**
 * A whole-text pattern that is one character class repeated (`^[a-z]{3,40}$`): the class's star
 * and the counts, so that the counts can be enforced by counting instead of a state per position.
 */
export function simpleRepeat(p: PatternSpec): { star: PatternSpec; min: number; max: number } | null {
  let ast: AST.Pattern;
  try {
    ast = parse(p.pattern);
  } catch {
    return null;
  }
  if (ast.alternatives.length !== 1) return null;
  const els = [...ast.alternatives[0].elements];
  const start = els.length > 0 && isEdge(els[0], 'start');
  const end = els.length > 0 && isEdge(els[els.length - 1], 'end');
  const body = els.slice(start ? 1 : 0, end ? -1 : undefined);
  if (!((start && end) || p.anchored) || body.length !== 1) return null;
  const q = body[0];
  if (q.type !== 'Quantifier' || !['Character', 'CharacterSet', 'CharacterClass'].includes(q.element.type)) return null;
  return { star: { ...p, pattern: `(?:${q.element.raw})*`, anchored: true }, min: q.min, max: q.max === Infinity ? -1 : q.max };
}

function parse(source: string): AST.Pattern {
  // Python's named groups `(?P<name>…)` (guided_regex clients write Python) are JavaScript's `(?<name>…)`.
  const pattern = source.replace(/\(\?P</g, '(?<');
  const parser = new RegExpParser({ ecmaVersion: 2025 });
  try {
    return parser.parsePattern(pattern, 0, pattern.length, { unicode: true });
  } catch {
    try {
      return parser.parsePattern(pattern, 0, pattern.length, { unicode: false });
    } catch (err) {
      throw new SchemaError(`invalid regex ${show(pattern)}: ${(err as Error).message.replace(pattern, '…')}`);
    }
  }
}

class RegexCompiler {
  constructor(
    private readonly b: CfgBuilder,
    private readonly pattern: string,
    private readonly options: RegexOptions,
  ) {}

  /** The pattern's alternatives, as grammar sequences. */
  compile(ast: AST.Pattern): Elem[][] {
    const anyText = this.b.repeat([this.chars(ANY)], 0, -1);
    return topAlternatives(ast.alternatives).map((alt) => {
      const els = [...alt.elements];
      let start = false;
      let end = false;
      while (els.length > 0 && isEdge(els[0], 'start')) start = !!els.shift();
      while (els.length > 0 && isEdge(els[els.length - 1], 'end')) end = !!els.pop();
      const body = els.flatMap((e) => this.element(e));
      if (this.options.anchored) return body;
      return [...(start ? [] : anyText), ...body, ...(end ? [] : anyText)];
    });
  }

  private alternatives(alts: AST.Alternative[]): Elem {
    return this.b.group(alts.map((a) => a.elements.flatMap((e) => this.element(e))));
  }

  private element(e: AST.Element): Elem[] {
    switch (e.type) {
      case 'Character':
        return [this.chars([[e.value, e.value]])];
      case 'CharacterSet':
        return [this.chars(this.characterSet(e))];
      case 'CharacterClass':
        return [this.chars(this.characterClass(e))];
      case 'Group':
        if (e.modifiers) this.unsupported('inline modifiers', e);
        return [this.alternatives(e.alternatives)];
      case 'CapturingGroup':
        return [this.alternatives(e.alternatives)];
      case 'Quantifier': {
        const max = e.max === Infinity ? -1 : e.max;
        if (e.min > MAX_REPEAT || max > MAX_REPEAT) this.unsupported(`a repetition count over ${MAX_REPEAT}`, e);
        return this.b.repeat(this.element(e.element), e.min, max);
      }
      case 'Assertion':
        if (e.kind === 'start' || e.kind === 'end') this.unsupported(`${e.raw} anywhere but at the ends`, e);
        if (e.kind === 'word') this.unsupported(`word boundaries (${e.raw})`, e);
        return this.unsupported(`${e.kind} assertions`, e);
      case 'Backreference':
        return this.unsupported('backreferences', e);
      case 'ExpressionCharacterClass':
        return this.unsupported('class set expressions', e);
    }
  }

  private characterSet(e: AST.CharacterSet): CodePoints {
    switch (e.kind) {
      case 'any':
        return subtract(ANY, LINE_TERMINATORS);
      case 'digit':
        return e.negate ? subtract(ANY, DIGIT) : DIGIT;
      case 'word':
        return e.negate ? subtract(ANY, WORD) : WORD;
      case 'space':
        return e.negate ? subtract(ANY, SPACE) : SPACE;
      case 'property':
        return this.unsupported('Unicode property escapes', e);
    }
  }

  private characterClass(e: AST.CharacterClass): CodePoints {
    const parts: CodePoints = [];
    for (const el of e.elements) {
      if (el.type === 'Character') parts.push([el.value, el.value]);
      else if (el.type === 'CharacterClassRange') parts.push([el.min.value, el.max.value]);
      else if (el.type === 'CharacterSet') parts.push(...this.characterSet(el));
      else this.unsupported('class set expressions', el);
    }
    const set = normalize(parts);
    return e.negate ? subtract(ANY, set) : set;
  }

  private chars(set: CodePoints): Elem {
    return this.b.codePoints(this.options.ignoreCase ? withOtherCase(set) : set, this.options.mode);
  }

  private unsupported(what: string, at: AST.Node): never {
    throw new SchemaError(`unsupported regex feature in ${show(this.pattern)}: ${what} (at offset ${at.start})`);
  }
}

/** A pattern as error messages quote it (long ones cut). */
function show(pattern: string): string {
  return JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 77)}...` : pattern);
}

function isEdge(e: AST.Element, kind: 'start' | 'end'): boolean {
  return e.type === 'Assertion' && e.kind === kind;
}

/** Top-level alternatives, looking through a group that is a whole alternative (`(^a$|^b$)`). */
function topAlternatives(alts: AST.Alternative[]): AST.Alternative[] {
  return alts.flatMap((a) => {
    const [only] = a.elements;
    if (a.elements.length === 1 && (only.type === 'Group' || only.type === 'CapturingGroup') && !('modifiers' in only && only.modifiers))
      return topAlternatives(only.alternatives);
    return [a];
  });
}

/** The set with the other case of its ASCII letters added. */
function withOtherCase(set: CodePoints): CodePoints {
  const extra: CodePoints = [];
  for (const [a, b] of set) {
    for (let c = Math.max(a, 0x41); c <= Math.min(b, 0x7a); c++) {
      if (c <= 0x5a) extra.push([c + 32, c + 32]);
      else if (c >= 0x61) extra.push([c - 32, c - 32]);
    }
  }
  return normalize([...set, ...extra]);
}
