// Value syntaxes besides JSON, for formats whose arguments are not JSON text:
//   PYTHON (pythonic): 'str' / "str" with Python escapes, True / False / None, numbers,
//     [lists], {'key': value} dicts. What the parser reads back: src/chat/tool-formats/pythonic/python-literal.ts.
//   GEMMA (fam3): <|"|>str<|"|> (or a JSON string), bare numbers / true / false / null, [lists],
//     {key:value} objects with unquoted keys where the parser reads them back unchanged (else a
//     JSON-quoted key). What the parser reads back: src/chat/tool-formats/gemma/gemma-args.ts.
// The shared nodes here are built once per process, so their (large) string masks are cached once
// per vocabulary.

import { JSON_SYNTAX, type ValueSyntax } from './json-schema-grammar.js';
import { MarkerDfa } from './literals.js';
import {
  alt,
  altSet,
  freeObject,
  FREE_STRING,
  jsonArray,
  lit,
  literalSwitch,
  NUMBER,
  objectNode,
  pythonString,
  seq,
  until,
  type GNode,
} from './nodes.js';

const NUMBER_FIRST = '-0123456789';

// ---------------------------------------------------------------------------------------------
// Python literals

const PY_SINGLE = pythonString("'", true);
const PY_DOUBLE = pythonString('"', true);

/** A Python string in either quote. */
export const PY_STRING = alt(true);
altSet(PY_STRING, "'", PY_SINGLE);
altSet(PY_STRING, '"', PY_DOUBLE);

const PY_ANY = alt(true);
const PY_ANY_OBJECT = freeObject(PY_ANY, true, PY_STRING);
const PY_ANY_ARRAY = jsonArray(PY_ANY, 0, -1, true);
altSet(PY_ANY, "'", PY_SINGLE);
altSet(PY_ANY, '"', PY_DOUBLE);
altSet(PY_ANY, '{', PY_ANY_OBJECT);
altSet(PY_ANY, '[', PY_ANY_ARRAY);
altSet(PY_ANY, NUMBER_FIRST, NUMBER);
altSet(PY_ANY, 'TFN', literalSwitch(['True', 'False', 'None'], null, true));

/** A Python string literal for `s`, with the escapes the pythonic parser decodes. */
export function pyStr(s: string, quote: "'" | '"' = "'"): string {
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\' || ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + quote;
}

/** The Python literal for a JSON value. */
export function pyLiteral(v: unknown): string {
  if (v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return pyStr(v);
  if (Array.isArray(v)) return `[${v.map(pyLiteral).join(', ')}]`;
  if (typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${pyStr(k)}: ${pyLiteral(x)}`)
      .join(', ')}}`;
  return JSON.stringify(v);
}

export const PYTHON: ValueSyntax = {
  string: PY_STRING,
  stringFirst: `'"`,
  any: PY_ANY,
  anyObject: PY_ANY_OBJECT,
  anyArray: PY_ANY_ARRAY,
  literal: pyLiteral,
  variants: (v) => (typeof v === 'string' ? [pyStr(v, '"')] : []),
  object: (keys, values, bits) =>
    objectNode(
      keys.map((k) => pyStr(k)),
      values,
      bits,
    ),
  freeObject: (value) => freeObject(value, false, PY_STRING),
};

/** A keyword argument's name as the pythonic parser reads it. */
export const PY_IDENTIFIER = /^[A-Za-z_]\w*$/;

/** Any keyword: an identifier then `=` (for keyword arguments whose names the schema leaves open). */
export const PY_KEYWORD_EQ: GNode = (() => {
  const wordByte = (b: number) => /[A-Za-z0-9_]/.test(String.fromCharCode(b)) && b < 0x80;
  const forbidden: Uint8Array[] = [];
  for (let b = 0; b < 256; b++) if (b !== 0x3d && !wordByte(b)) forbidden.push(Uint8Array.of(b));
  const rest = until(new MarkerDfa(['='], forbidden), true);
  // The first character is a letter or `_`; the rest runs to `=` (ASCII word characters only).
  const n = alt(true);
  for (let b = 0; b < 0x80; b++) if (/[A-Za-z_]/.test(String.fromCharCode(b))) n.kids[b] = rest;
  return n;
})();

// ---------------------------------------------------------------------------------------------
// Gemma's relaxed objects

export const GEMMA_QUOTE = '<|"|>';

/** `<|"|>` … `<|"|>`: any text without the quote inside. */
const GEMMA_QUOTED = seq([lit(GEMMA_QUOTE), until(new MarkerDfa([GEMMA_QUOTE], []), true)]);

const GEMMA_STRING = alt(true);
altSet(GEMMA_STRING, '<', GEMMA_QUOTED);
altSet(GEMMA_STRING, '"', FREE_STRING);

const GEMMA_ANY = alt(true);
const GEMMA_ANY_OBJECT = freeObject(GEMMA_ANY, true); // JSON-quoted keys, which the parser accepts
const GEMMA_ANY_ARRAY = jsonArray(GEMMA_ANY, 0, -1, true);
altSet(GEMMA_ANY, '<', GEMMA_QUOTED);
altSet(GEMMA_ANY, '"', FREE_STRING);
altSet(GEMMA_ANY, '{', GEMMA_ANY_OBJECT);
altSet(GEMMA_ANY, '[', GEMMA_ANY_ARRAY);
altSet(GEMMA_ANY, NUMBER_FIRST, NUMBER);
altSet(GEMMA_ANY, 'tfn', literalSwitch(['true', 'false', 'null'], null, true));

/** A key as Gemma writes it, with its colon: bare where the parser reads it back unchanged. */
export function gemmaKey(k: string): string {
  // eslint-disable-next-line no-control-regex -- control characters force quoting
  const bare = k.length > 0 && k === k.trim() && !/[:{}[\],"\u0000-\u001f\u007f]/.test(k);
  return `${bare ? k : JSON.stringify(k)}:`;
}

/** Gemma's spelling of a JSON value. */
export function gemmaLiteral(v: unknown): string {
  if (typeof v === 'string') return v.includes(GEMMA_QUOTE) ? JSON.stringify(v) : GEMMA_QUOTE + v + GEMMA_QUOTE;
  if (Array.isArray(v)) return `[${v.map(gemmaLiteral).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => gemmaKey(k) + gemmaLiteral(x))
      .join(',')}}`;
  return JSON_SYNTAX.literal(v);
}

export const GEMMA: ValueSyntax = {
  string: GEMMA_STRING,
  stringFirst: '<"',
  any: GEMMA_ANY,
  anyObject: GEMMA_ANY_OBJECT,
  anyArray: GEMMA_ANY_ARRAY,
  literal: gemmaLiteral,
  variants: (v) => (typeof v === 'string' ? [JSON.stringify(v)] : []),
  object: (keys, values, bits) => objectNode(keys.map(gemmaKey), values, bits, { keyHasColon: true }),
  freeObject: (value) => freeObject(value),
};
