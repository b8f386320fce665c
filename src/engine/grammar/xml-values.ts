// Parameter values of the formats that carry each argument as raw text between tags (fam1,
// fam4_xml, glm4). Their parsers turn the text into a JSON value by the parameter's declared types
// (param-values.ts: "5" is 5 for an integer parameter, "5" for a string one),
// so the grammar admits only text that this conversion turns into a value valid for the schema:
//   - free text (up to the closing tag) where every text converts to something valid — a string
//     parameter, or one whose other types take any value of theirs;
//   - otherwise compact JSON of the typed branches (numbers, objects, arrays) and the enum/const
//     values whose text converts back to themselves.
// A parameter no text can satisfy has no node (the format leaves it out, or gives up when it is
// required).

import { GrammarError } from './errors.js';
import type { XmlValueStyle } from './ir.js';
import { SchemaCompiler, type ValueSyntax } from './json-schema-grammar.js';
import { MarkerDfa, seenBit } from './literals.js';
import {
  alt,
  altSet,
  freeObject,
  guardedString,
  jsonArray,
  lit,
  literalSwitch,
  NUMBER,
  objectNode,
  seq,
  until,
  xmlParams,
  type GNode,
} from './nodes.js';
import { convertParamText as convert, declaredTypes, schemaProperties } from './param-values.js';
import { hasAnyInteger, isAnyNumber, type NumberSpec } from './schema-values.js';

const textNodes = new Map<string, GNode>();

/** Free text up to the closing tag; shared per style so its (large) mask is computed once per vocabulary. */
function textNode(style: XmlValueStyle): GNode {
  const key = JSON.stringify([style.close, style.forbidden]);
  let node = textNodes.get(key);
  if (!node) textNodes.set(key, (node = until(new MarkerDfa([style.close], style.forbidden), true)));
  return node;
}

const jsonSyntaxes = new Map<string, ValueSyntax>();

/**
 * JSON whose strings never contain the style's tags (the parser would end the value there): the
 * syntax of typed values inside a tag. Enum texts and keys that hold a tag write its `<` as
 * `\u003c`. Shared per style, so its string masks are cached once per vocabulary.
 */
export function xmlJsonSyntax(style: XmlValueStyle): ValueSyntax {
  const markers = [style.close, ...style.forbidden];
  const key = JSON.stringify(markers);
  const known = jsonSyntaxes.get(key);
  if (known) return known;
  const string = guardedString(new MarkerDfa([], markers), true);
  const any = alt(true);
  const anyObject = freeObject(any, true, string);
  const anyArray = jsonArray(any, 0, -1, true);
  altSet(any, '"', string);
  altSet(any, '{', anyObject);
  altSet(any, '[', anyArray);
  altSet(any, '-0123456789', NUMBER);
  altSet(any, 'tfn', literalSwitch(['true', 'false', 'null'], null, true));
  const safe = (json: string) => (markers.some((m) => json.includes(m)) ? json.replace(/</g, '\\u003c') : json);
  const syntax: ValueSyntax = {
    string,
    stringFirst: '"',
    any,
    anyObject,
    anyArray,
    literal: (v) => safe(JSON.stringify(v)),
    object: (keys, values, bits) =>
      objectNode(
        keys.map((k) => safe(JSON.stringify(k))),
        values,
        bits,
      ),
    freeObject: (value) => freeObject(value, false, string),
  };
  jsonSyntaxes.set(key, syntax);
  return syntax;
}

/**
 * The node for one parameter's value text, through its closing tag; null when no text is valid.
 * `compiler` spells JSON in xmlJsonSyntax(style).
 */
export function xmlValue(compiler: SchemaCompiler, schema: unknown, style: XmlValueStyle): GNode | null {
  const types = declaredTypes(schema);
  const b = compiler.branches(schema);
  const tail = style.frame + style.close;
  /** A JSON value and its closing tag (the frame in front is written by the caller). */
  const json = (node: GNode) => seq([node, lit(tail)]);
  const framed = (node: GNode) => (style.frame ? seq([lit(style.frame), node]) : node);

  if (types.size === 0) {
    if (style.untyped === 'json') {
      // Text that parses as JSON is that JSON: write the value as JSON (any text when anything goes).
      const node = compiler.compile(schema);
      return node === compiler.syntax.any ? textNode(style) : framed(json(node));
    }
    // The text is the value, a string.
    if (b.string) return textNode(style);
  } else if (b.string && types.has('string') && freeTextSafe(types, b, compiler.syntax)) {
    return textNode(style);
  }

  // Typed JSON values and literals, told apart by their first byte.
  const choice = alt();
  const taken = new Set<number>();
  const add = (first: string, node: GNode) => {
    altSet(choice, first, node);
    for (const c of first) taken.add(c.charCodeAt(0));
  };
  if (types.size > 0) {
    if (b.number && (types.has('integer') || types.has('number'))) {
      // Without `number` declared, the parser keeps a fraction as text: integers only.
      const node = compiler.numberNode(types.has('number') ? b.number : integersOf(b.number));
      if (node) add('-0123456789', json(node));
    }
    if (b.object && types.has('object')) add('{', json(b.object));
    if (b.array && types.has('array')) add('[', json(b.array));
  }
  const literals: string[] = [];
  for (const l of new Set(b.literals)) {
    const value: unknown = JSON.parse(l);
    const text = typeof value === 'string' ? value : l;
    if ([style.close, ...style.forbidden].some((tag) => text.includes(tag))) continue;
    if (!sameJson(convert(style.frame + text + style.frame, types, style.untyped), value)) continue;
    literals.push(text + tail);
  }
  const utf8 = new TextEncoder();
  const open = literals.filter((l) => !taken.has(utf8.encode(l)[0]));
  if (open.length > 0) {
    try {
      const sw = literalSwitch(open);
      const firsts = [...new Set(open.map((l) => utf8.encode(l)[0]))];
      altSet(choice, firsts, sw);
    } catch {
      // Enum texts one of which prefixes another through the closing tag: leave the enum out.
    }
  }
  if (!choice.kids.some((k) => k !== null)) return null;
  return framed(choice);
}

/** Every text converts to a valid value: each declared type other than string takes any value of its type. */
function freeTextSafe(types: ReadonlySet<string>, b: ReturnType<SchemaCompiler['branches']>, syn: ValueSyntax): boolean {
  for (const t of types) {
    const ok =
      t === 'string' ||
      (t === 'null' && b.literals.includes('null')) ||
      (t === 'integer' && b.number !== null && hasAnyInteger(b.number)) ||
      (t === 'number' && b.number !== null && isAnyNumber(b.number)) ||
      (t === 'boolean' && b.literals.includes('true') && b.literals.includes('false')) ||
      (t === 'object' && b.object === syn.anyObject) ||
      (t === 'array' && b.array === syn.anyArray) ||
      !['null', 'integer', 'number', 'boolean', 'object', 'array'].includes(t); // a type the parser does not convert to
    if (!ok) return false;
  }
  return true;
}

/** The integers of a number spec. */
function integersOf(spec: NumberSpec): NumberSpec {
  return spec.flatMap((a): NumberSpec => ('range' in a ? [{ range: { ...a.range, integer: true } }] : /^-?\d+$/.test(a.text) ? [a] : []));
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A tool's parameters as tagged elements: `openTag(key)` + value for each writable listed property
 * (each at most once), then `closeTag`, allowed once every required one is written. Properties
 * whose key the format cannot spell, or whose value no text satisfies, are left out; a required one
 * makes the tool uncallable in this format (GrammarError).
 */
export function xmlParamsNode(parameters: unknown, style: XmlValueStyle, openTag: (key: string) => string | null, closeTag: string): GNode {
  const { props, required } = schemaProperties(parameters);
  const compiler = new SchemaCompiler(parameters, xmlJsonSyntax(style));
  const tags: string[] = [];
  const values: GNode[] = [];
  const written = new Set<string>();
  let bits = 0;
  for (const [key, schema] of props) {
    const tag = openTag(key);
    const value = tag === null ? null : xmlValue(compiler, schema, style);
    if (tag === null || value === null) continue;
    if (required.includes(key)) bits |= seenBit(tags.length + 1); // literal 0 is the closing tag
    tags.push(tag);
    values.push(value);
    written.add(key);
  }
  for (const key of required) {
    if (!written.has(key)) throw new GrammarError(`grammar: required parameter ${JSON.stringify(key)} cannot be written in this format`);
  }
  return xmlParams(tags, closeTag, values, bits);
}
