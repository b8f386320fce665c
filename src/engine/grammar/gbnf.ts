// llama.cpp's GBNF → a byte-level grammar (cfg.ts), for the `guided_grammar` constraint.
//
//   root   ::= greeting (", " name)* "!"      # `root` is where matching starts
//   name   ::= [A-Z] [a-z]{1,15} | "you"
//
// Rules `name ::= alternatives` (names of letters, digits, `-` and `_`; a rule runs until the next
// `name ::=`, so alternatives may continue on later lines); `|`; sequences; literals "…" with
// escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH; classes [a-z0-9_] and negated [^…] (same
// escapes); `.` (any character); groups ( … ); repetition * + ? {m} {m,} {m,n}; comments from #
// to the end of the line. Characters are Unicode code points, matched as UTF-8.
// Errors (SchemaError) give the line and column. A left-recursive rule (x ::= x "a" | "b") is
// rejected: write it as a repetition (x ::= "b" "a"*).

import { CfgBuilder, normalize, subtract, type Cfg, type CodePoints, type Elem } from './cfg.js';
import { CfgMachine } from './cfg-machine.js';
import { SchemaError } from './errors.js';
import { MAX_REPEAT } from './regex.js';
import { MAX_CODE_POINT } from './utf8-ranges.js';

/** Most parser states a GBNF grammar may reach while decoding (they are worked out as met). */
export const MAX_GBNF_STATES = 65_536;

/** The grammar's machine (its states are worked out while decoding). */
export function gbnfMachine(source: string): CfgMachine {
  return new CfgMachine(gbnfCfg(source), MAX_GBNF_STATES, 'GBNF grammar');
}

export function gbnfCfg(source: string): Cfg {
  return new GbnfParser(source).parse();
}

const NAME = /[A-Za-z0-9_-]/;
const SIMPLE_ESCAPES: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, '\\': 0x5c, '"': 0x22, '[': 0x5b, ']': 0x5d };
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

class GbnfParser {
  private pos = 0;
  private readonly b = new CfgBuilder('GBNF');
  private readonly rules = new Map<string, number>();
  /** Where each rule was first referenced, for "not defined" errors. */
  private readonly firstUse = new Map<string, number>();
  /** Where each rule is defined. */
  private readonly defAt = new Map<number, number>();

  constructor(private readonly src: string) {
    this.b.locate = (r) => `${this.where(this.defAt.get(r) ?? 0)}: rule '${[...this.rules].find(([, id]) => id === r)?.[0] ?? r}'`;
  }

  parse(): Cfg {
    this.skip();
    if (this.pos >= this.src.length) this.fail('the grammar is empty');
    while (this.pos < this.src.length) this.rule();
    for (const [name, rule] of this.rules) {
      if (!this.b.isDefined(rule)) this.fail(`rule '${name}' is not defined`, this.firstUse.get(name));
    }
    const root = this.rules.get('root');
    if (root === undefined) this.fail("there is no rule 'root' (where matching starts)", 0);
    return this.b.build(root, true);
  }

  private rule(): void {
    const at = this.pos;
    const name = this.name();
    this.skip();
    if (!this.src.startsWith('::=', this.pos)) this.fail("expected '::=' after the rule name");
    this.pos += 3;
    this.skip();
    const id = this.ruleId(name, at);
    if (this.b.isDefined(id)) this.fail(`rule '${name}' is defined twice`, at);
    this.defAt.set(id, at);
    this.b.define(id, this.alternatives(false));
  }

  private ruleId(name: string, at: number): number {
    let id = this.rules.get(name);
    if (id === undefined) {
      id = this.b.declare(name);
      this.rules.set(name, id);
      this.firstUse.set(name, at);
    }
    return id;
  }

  private alternatives(nested: boolean): Elem[][] {
    const alts = [this.sequence(nested)];
    while (this.peek() === '|') {
      this.pos++;
      this.skip();
      alts.push(this.sequence(nested));
    }
    return alts;
  }

  private sequence(nested: boolean): Elem[] {
    const seq: Elem[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || (c === ')' && nested)) return seq;
      if (!nested && this.atRuleStart()) return seq;
      const at = this.pos;
      const term = this.term();
      this.skip();
      seq.push(...this.repetition(term, at));
    }
  }

  private term(): Elem[] {
    const c = this.peek()!;
    if (c === '"') return this.literal();
    if (c === '[') return [this.charClass()];
    if (c === '.') {
      this.pos++;
      return [this.b.codePoints([[0, MAX_CODE_POINT]], 'raw')];
    }
    if (c === '(') {
      this.pos++;
      this.skip();
      const alts = this.alternatives(true);
      if (this.peek() !== ')') this.fail("expected ')'");
      this.pos++;
      return [this.b.group(alts)];
    }
    if (NAME.test(c)) {
      const at = this.pos;
      return [this.b.ref(this.ruleId(this.name(), at))];
    }
    return this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  private repetition(term: Elem[], at: number): Elem[] {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '*' || c === '+' || c === '?') {
      this.pos++;
      [min, max] = c === '*' ? [0, -1] : c === '+' ? [1, -1] : [0, 1];
    } else if (c === '{') {
      this.pos++;
      this.skip();
      min = this.integer();
      this.skip();
      max = min;
      if (this.peek() === ',') {
        this.pos++;
        this.skip();
        max = this.peek() === '}' ? -1 : this.integer();
        this.skip();
      }
      if (this.peek() !== '}') this.fail("expected '}'");
      this.pos++;
      if (max >= 0 && max < min) this.fail(`repetition {${min},${max}}: the maximum is below the minimum`, at);
      if (min > MAX_REPEAT || max > MAX_REPEAT) this.fail(`a repetition count over ${MAX_REPEAT}`, at);
    } else {
      return term;
    }
    this.skip();
    return this.b.repeat(term, min, max);
  }

  private literal(): Elem[] {
    this.pos++; // "
    const out: Elem[] = [];
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) this.fail('unterminated literal');
      if (c === '"') break;
      const cp = this.char();
      out.push(this.b.codePoints([[cp, cp]], 'raw'));
    }
    this.pos++;
    if (out.length === 0) return [];
    return out;
  }

  private charClass(): Elem {
    this.pos++; // [
    const negate = this.src[this.pos] === '^';
    if (negate) this.pos++;
    const set: CodePoints = [];
    while (this.src[this.pos] !== ']') {
      if (this.pos >= this.src.length) this.fail('unterminated character class');
      const lo = this.char();
      let hi = lo;
      if (this.src[this.pos] === '-' && this.src[this.pos + 1] !== ']' && this.pos + 1 < this.src.length) {
        this.pos++;
        const at = this.pos;
        hi = this.char();
        if (hi < lo) this.fail('a character range whose end is below its start', at);
      }
      set.push([lo, hi]);
    }
    this.pos++;
    const sorted = normalize(set);
    return this.b.codePoints(negate ? subtract([[0, MAX_CODE_POINT]], sorted) : sorted, 'raw');
  }

  /** One character of a literal or class, escapes decoded. */
  private char(): number {
    const at = this.pos;
    const c = this.src.codePointAt(this.pos)!;
    this.pos += c > 0xffff ? 2 : 1;
    if (c !== 0x5c) return c;
    const e = this.src[this.pos++];
    if (e !== undefined && e in SIMPLE_ESCAPES) return SIMPLE_ESCAPES[e];
    const digits = e === undefined ? undefined : HEX_ESCAPES[e];
    if (digits === undefined) return this.fail(`unknown escape \\${e ?? ''}`, at);
    const hex = this.src.slice(this.pos, this.pos + digits);
    if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) this.fail(`\\${e} needs ${digits} hex digits`, at);
    this.pos += digits;
    const v = parseInt(hex, 16);
    if (v > MAX_CODE_POINT || (v >= 0xd800 && v <= 0xdfff)) this.fail(`\\${e}${hex} is not a Unicode scalar value`, at);
    return v;
  }

  private name(): string {
    const start = this.pos;
    while (this.pos < this.src.length && NAME.test(this.src[this.pos])) this.pos++;
    if (this.pos === start) this.fail('expected a rule name');
    return this.src.slice(start, this.pos);
  }

  private integer(): number {
    const m = /^\d+/.exec(this.src.slice(this.pos, this.pos + 12));
    if (!m) this.fail('expected a number');
    this.pos += m[0].length;
    return Number(m[0]);
  }

  /** `name ::=` ahead: the next rule starts here. */
  private atRuleStart(): boolean {
    let i = this.pos;
    while (i < this.src.length && NAME.test(this.src[i])) i++;
    if (i === this.pos) return false;
    while (i < this.src.length && /[ \t\r\n]/.test(this.src[i])) i++;
    return this.src.startsWith('::=', i);
  }

  private peek(): string | undefined {
    return this.src[this.pos];
  }

  /** Skips whitespace (newlines included) and comments. */
  private skip(): void {
    for (;;) {
      const c = this.src[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.pos++;
      else if (c === '#') while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++;
      else return;
    }
  }

  private fail(message: string, at = this.pos): never {
    throw new SchemaError(`GBNF ${this.where(at)}: ${message}`);
  }

  private where(at: number): string {
    const before = this.src.slice(0, at);
    return `line ${before.split('\n').length}, column ${at - before.lastIndexOf('\n')}`;
  }
}
