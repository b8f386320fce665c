// A cursor over a finished piece of text, for the small recursive-descent parsers of
// non-JSON argument syntaxes (Gemma's relaxed objects, Python keyword arguments).
// These run once per call, on the call's completed text.

import { isWs } from './scan.js';

export class LiteralError extends Error {}

export class Cursor {
  i = 0;

  constructor(readonly s: string) {}

  get atEnd(): boolean {
    return this.i >= this.s.length;
  }

  peek(): string | undefined {
    return this.s[this.i];
  }

  ws(): void {
    while (isWs(this.s[this.i])) this.i++;
  }

  /** Consumes `lit` if it is next. */
  eat(lit: string): boolean {
    if (!this.s.startsWith(lit, this.i)) return false;
    this.i += lit.length;
    return true;
  }

  expect(lit: string): void {
    if (!this.eat(lit)) this.fail(`expected ${lit}`);
  }

  /** Consumes and returns the match of a sticky regex at the cursor, or null. */
  match(re: RegExp): string | null {
    re.lastIndex = this.i;
    const m = re.exec(this.s);
    if (!m) return null;
    this.i += m[0].length;
    return m[0];
  }

  /** A double-quoted JSON string at the cursor, decoded. */
  jsonString(): string {
    const m = this.match(/"(?:[^"\\]|\\.)*"/y);
    if (m === null) this.fail('unterminated string');
    try {
      // JSON escapes raw control characters, which the model may have written literally.
      // eslint-disable-next-line no-control-regex
      return JSON.parse(m.replace(/[\u0000-\u001f]/g, (c) => JSON.stringify(c).slice(1, -1))) as string;
    } catch {
      this.fail('bad string');
    }
  }

  fail(why: string): never {
    throw new LiteralError(`${why} at ${this.i}`);
  }
}

export const NUMBER_RE = /[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/y;
