// Gemma's relaxed argument objects: `{location:<|"|>Paris<|"|>,days:3,opts:{metric:true}}`
// — unquoted keys, `<|"|>` as the string quote (JSON `"…"` strings are accepted too),
// and bare words read as numbers, booleans, null or else strings.

import { Cursor, LiteralError, NUMBER_RE } from '../common/literal-text.js';

export const GEMMA_QUOTE = '<|"|>';

/** The object the text denotes, or null if it is not a relaxed object. */
export function parseGemmaObject(text: string): Record<string, unknown> | null {
  const c: Cursor = new Cursor(text);
  try {
    const v = object(c);
    c.ws();
    return c.atEnd ? v : null;
  } catch (e) {
    if (e instanceof LiteralError) return null;
    throw e;
  }
}

function object(c: Cursor): Record<string, unknown> {
  c.ws();
  c.expect('{');
  const out: Record<string, unknown> = {};
  c.ws();
  if (c.eat('}')) return out;
  for (;;) {
    const k = key(c);
    c.ws();
    c.expect(':');
    out[k] = value(c);
    c.ws();
    if (c.eat('}')) return out;
    c.expect(',');
    c.ws();
    if (c.eat('}')) return out;
  }
}

function array(c: Cursor): unknown[] {
  c.expect('[');
  const out: unknown[] = [];
  c.ws();
  if (c.eat(']')) return out;
  for (;;) {
    out.push(value(c));
    c.ws();
    if (c.eat(']')) return out;
    c.expect(',');
    c.ws();
    if (c.eat(']')) return out;
  }
}

function key(c: Cursor): string {
  c.ws();
  if (c.peek() === '"') return c.jsonString();
  if (c.s.startsWith(GEMMA_QUOTE, c.i)) return quoted(c);
  const k = c.match(/[^:{}[\],]+/y)?.trim();
  if (!k) c.fail('expected a key');
  return k;
}

function value(c: Cursor): unknown {
  c.ws();
  if (c.s.startsWith(GEMMA_QUOTE, c.i)) return quoted(c);
  const ch = c.peek();
  if (ch === '"') return c.jsonString();
  if (ch === '{') return object(c);
  if (ch === '[') return array(c);
  const word = c.match(/[^,{}[\]]+/y)?.trim();
  if (!word) c.fail('expected a value');
  if (word === 'true' || word === 'false') return word === 'true';
  if (word === 'null') return null;
  NUMBER_RE.lastIndex = 0;
  const num = NUMBER_RE.exec(word);
  return num && num[0] === word ? Number(word) : word;
}

function quoted(c: Cursor): string {
  c.expect(GEMMA_QUOTE);
  const end = c.s.indexOf(GEMMA_QUOTE, c.i);
  if (end < 0) c.fail('unterminated string');
  const v = c.s.slice(c.i, end);
  c.i = end + GEMMA_QUOTE.length;
  return v;
}
