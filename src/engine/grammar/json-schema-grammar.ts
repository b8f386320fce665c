// JSON schema → grammar nodes, for the subset tool definitions use:
//   type (one or a list), properties / required (only listed keys; optional ones may be left out;
//   `properties: {}` means no keys), additionalProperties (a schema, when there are no properties;
//   false: no keys), items, minItems / maxItems,
//   enum / const, anyOf / oneOf (merged by JSON type), nullable, allOf (merged), local $ref.
// Anything else (pattern, format, minimum, string lengths, tuples, …) is not enforced: the value
// is any JSON of the right type, or any JSON value at all when the type is unknown.
//
// Every value compiles to a choice on its first byte (`"` string, `{` object, …), so matching is
// deterministic. Alternatives of one JSON type are merged (both objects → any object) rather than
// tried in turn: looser than the schema in that rare case, never stricter.
//
// The values are spelled in a ValueSyntax: JSON by default; formats whose arguments are not JSON
// (Python literals, Gemma's relaxed objects) bring their own strings, literals and object syntax
// (value-syntaxes.ts), and the schema logic stays the same.

import { seenBit } from './literals.js';
import {
  alt,
  altSet,
  ANY_ARRAY,
  ANY_OBJECT,
  ANY_VALUE,
  freeObject,
  FREE_STRING,
  INTEGER_NUMBER,
  jsonArray,
  jsonObject,
  Kind,
  literalSwitch,
  NUMBER,
  type GNode,
} from './nodes.js';

type Schema = Record<string, unknown>;

/** How values are spelled: JSON, or a format's own literal syntax. Numbers and `[a, b]` arrays are JSON's in every syntax. */
export interface ValueSyntax {
  /** Any string value. */
  readonly string: GNode;
  /** The bytes a string value can start with. */
  readonly stringFirst: string;
  /** Any value, any object, any array. */
  readonly any: GNode;
  readonly anyObject: GNode;
  readonly anyArray: GNode;
  /** The spelling of a JSON value (enum and const members, true, false, null). */
  literal(value: unknown): string;
  /** Other spellings a model may use for the same value (a string in the other quotes). */
  variants?(value: unknown): string[];
  /** An object with these keys (each at most once; optional ones may be left out). */
  object(keys: readonly string[], values: GNode[], requiredBits: number): GNode;
  /** An object with any keys, whose values match `value`. */
  freeObject(value: GNode): GNode;
}

export const JSON_SYNTAX: ValueSyntax = {
  string: FREE_STRING,
  stringFirst: '"',
  any: ANY_VALUE,
  anyObject: ANY_OBJECT,
  anyArray: ANY_ARRAY,
  literal: (v) => JSON.stringify(v),
  object: jsonObject,
  freeObject: (value) => freeObject(value),
};

/** The listed properties of an object schema (compiled), or the schema of its free values. */
export type ObjectParts = { free: false; keys: string[]; values: GNode[]; required: string[] } | { free: true; value: GNode };

/** The JSON types a schema admits, each with the node that matches it. */
export interface Branches {
  string: GNode | null;
  number: GNode | null;
  object: GNode | null;
  array: GNode | null;
  /** Exact JSON texts (enum/const values, true, false, null). */
  literals: string[];
}

const NONE = (): Branches => ({ string: null, number: null, object: null, array: null, literals: [] });
const ANY = (syn: ValueSyntax): Branches => ({
  string: syn.string,
  number: NUMBER,
  object: syn.anyObject,
  array: syn.anyArray,
  literals: ['true', 'false', 'null'],
});

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

export class SchemaCompiler {
  private readonly done = new Map<Schema, GNode>();
  /** $refs being compiled: their node exists (so recursion can point at it) but is not filled yet. */
  private readonly pendingRefs = new Map<string, GNode>();
  private readonly refs = new Map<string, GNode>();

  /** `root` is the document local `$ref`s point into (a tool's parameters schema). */
  constructor(
    private readonly root: unknown,
    readonly syntax: ValueSyntax = JSON_SYNTAX,
  ) {}

  /** The node matching one value valid for `schema`. */
  compile(schema: unknown): GNode {
    const syn = this.syntax;
    if (!isSchema(schema) || Object.keys(schema).length === 0) return syn.any;
    const ref = typeof schema.$ref === 'string' ? schema.$ref : null;
    if (ref !== null) {
      const known = this.refs.get(ref) ?? this.pendingRefs.get(ref);
      if (known) return known;
      const node = alt();
      this.pendingRefs.set(ref, node);
      const target = this.resolve(ref);
      fill(node, target === undefined ? ANY(syn) : this.branches(target), syn);
      this.pendingRefs.delete(ref);
      this.refs.set(ref, node);
      return node;
    }
    let node = this.done.get(schema);
    if (!node) {
      const b = this.branches(schema);
      node = isAny(b, syn) ? syn.any : fill(alt(), b, syn);
      this.done.set(schema, node);
    }
    return node;
  }

  /** What `schema` admits, by JSON type. */
  branches(schema: unknown): Branches {
    const syn = this.syntax;
    const ANY_ = () => ANY(syn);
    if (!isSchema(schema)) return ANY_();
    if (typeof schema.$ref === 'string') {
      // A $ref inside its own definition (directly, through anyOf) cannot be split by type yet.
      if (this.pendingRefs.has(schema.$ref)) return ANY_();
      const target = this.resolve(schema.$ref);
      return target === undefined ? ANY_() : this.branches(target);
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      const { allOf, ...rest } = schema;
      return this.branches(mergeAll([rest, ...(allOf as unknown[]).map((s) => this.deref(s))]));
    }
    if ('const' in schema) return { ...NONE(), literals: jsonTexts([schema.const]) };
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return { ...NONE(), literals: jsonTexts(schema.enum) };

    const alternatives = [...(Array.isArray(schema.anyOf) ? schema.anyOf : []), ...(Array.isArray(schema.oneOf) ? schema.oneOf : [])];
    // anyOf that only adds constraints to this schema's own type (each alternative untyped) is not enforced.
    if (alternatives.length > 0 && alternatives.every((a) => isSchema(a) && typed(a))) {
      let out = NONE();
      for (const a of alternatives) out = merge(out, this.branches(a), syn);
      if (schema.nullable === true) out.literals.push('null');
      return out;
    }

    const types = Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : inferTypes(schema);
    if (types.length === 0) return ANY_();
    const out = NONE();
    for (const t of types) {
      if (t === 'string') out.string = syn.string;
      else if (t === 'integer') out.number ??= INTEGER_NUMBER;
      else if (t === 'number') out.number = NUMBER;
      else if (t === 'boolean') out.literals.push('true', 'false');
      else if (t === 'null') out.literals.push('null');
      else if (t === 'object') out.object = this.object(schema);
      else if (t === 'array') out.array = this.array(schema);
      else return ANY_(); // an unknown type name: do not guess
    }
    if (schema.nullable === true) out.literals.push('null');
    return out;
  }

  private object(schema: Schema): GNode {
    const parts = this.objectParts(schema);
    if (parts.free) return parts.value === this.syntax.any ? this.syntax.anyObject : this.syntax.freeObject(parts.value);
    return this.syntax.object(parts.keys, parts.values, requiredBits(parts.keys, parts.required));
  }

  /**
   * The properties of an object schema, compiled (local $refs and allOf resolved), for a caller
   * that spells the object itself (Python keyword arguments, XML parameters).
   */
  objectParts(schema: unknown): ObjectParts {
    let s = schema;
    for (let hops = 0; isSchema(s) && typeof s.$ref === 'string' && hops < 8; hops++) s = this.resolve(s.$ref);
    if (!isSchema(s)) return { free: true, value: this.syntax.any };
    if (Array.isArray(s.allOf) && s.allOf.length > 0) {
      const { allOf, ...rest } = s;
      s = mergeAll([rest, ...(allOf as unknown[]).map((x) => this.deref(x))]);
    }
    const o = s as Schema;
    const props = isSchema(o.properties) ? Object.entries(o.properties) : [];
    // Listed properties (even none, as tools without arguments declare) or `additionalProperties:
    // false` close the object to those keys; otherwise any keys.
    if (props.length === 0 && !isSchema(o.properties) && o.additionalProperties !== false) {
      const extra = o.additionalProperties;
      return { free: true, value: isSchema(extra) && Object.keys(extra).length > 0 ? this.compile(extra) : this.syntax.any };
    }
    return {
      free: false,
      keys: props.map(([k]) => k),
      values: props.map(([, v]) => this.compile(v)),
      required: Array.isArray(o.required) ? o.required.filter((k): k is string => typeof k === 'string') : [],
    };
  }

  private array(schema: Schema): GNode {
    const syn = this.syntax;
    const items = isSchema(schema.items) ? this.compile(schema.items) : syn.any;
    const min = count(schema.minItems) ?? 0;
    const max = count(schema.maxItems) ?? -1;
    if (items === syn.any && min === 0 && max < 0) return syn.anyArray;
    return jsonArray(items, min, max < 0 ? -1 : Math.max(max, min));
  }

  private resolve(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined; // remote references are not fetched
    let at: unknown = this.root;
    for (const raw of ref
      .slice(1)
      .split('/')
      .filter((p) => p !== '')) {
      const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isSchema(at)) return undefined;
      at = at[part];
    }
    return at;
  }

  private deref(s: unknown): unknown {
    return isSchema(s) && typeof s.$ref === 'string' && !this.pendingRefs.has(s.$ref) ? (this.resolve(s.$ref) ?? s) : s;
  }
}

/** The node for a tool's parameters: a JSON object (any object when no schema is given). */
export function parametersNode(parameters: unknown): GNode {
  if (!isSchema(parameters)) return ANY_OBJECT;
  return objectBranch(new SchemaCompiler(parameters).compile(parameters), ANY_OBJECT);
}

/**
 * The object branch of a compiled value: a call's arguments must be an object even where the
 * schema admits more (`{}`, a type list), since the parsers take nothing else as arguments.
 */
export function objectBranch(node: GNode, fallback: GNode): GNode {
  if (node.kind === Kind.Obj) return node;
  return node.kind === Kind.Alt ? (node.kids[0x7b] ?? fallback) : fallback;
}

/** seenBit of each required key, by the key's index. */
export function requiredBits(keys: readonly string[], required: readonly string[]): number {
  let bits = 0;
  keys.forEach((k, i) => {
    if (required.includes(k)) bits |= seenBit(i);
  });
  return bits;
}

/** JSON texts of enum values (undefined and functions have none). */
function jsonTexts(values: unknown[]): string[] {
  return values.map((v) => JSON.stringify(v) as string | undefined).filter((t): t is string => typeof t === 'string');
}

function typed(s: Schema): boolean {
  return ['type', 'enum', 'const', '$ref', 'properties', 'items', 'anyOf', 'oneOf', 'allOf'].some((k) => k in s);
}

function inferTypes(s: Schema): string[] {
  if (isSchema(s.properties) || isSchema(s.additionalProperties)) return ['object'];
  if ('items' in s) return ['array'];
  return [];
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

function isAny(b: Branches, syn: ValueSyntax): boolean {
  return (
    b.string === syn.string &&
    b.number === NUMBER &&
    b.object === syn.anyObject &&
    b.array === syn.anyArray &&
    ['true', 'false', 'null'].every((l) => b.literals.includes(l))
  );
}

/** Both schemas' values. Two structures of one type merge into the unconstrained one. */
function merge(a: Branches, b: Branches, syn: ValueSyntax): Branches {
  const one = (x: GNode | null, y: GNode | null, loose: GNode) => (x && y && x !== y ? loose : (x ?? y));
  return {
    string: one(a.string, b.string, syn.string),
    number: a.number === NUMBER || b.number === NUMBER ? NUMBER : (a.number ?? b.number),
    object: one(a.object, b.object, syn.anyObject),
    array: one(a.array, b.array, syn.anyArray),
    literals: [...a.literals, ...b.literals],
  };
}

/** allOf: one schema with every part's properties and required keys (other keywords: first wins). */
function mergeAll(parts: unknown[]): Schema {
  const out: Schema = {};
  const properties: Schema = {};
  const required: unknown[] = [];
  for (const p of parts) {
    if (!isSchema(p)) continue;
    for (const [k, v] of Object.entries(p)) if (!(k in out)) out[k] = v;
    if (isSchema(p.properties)) Object.assign(properties, p.properties);
    if (Array.isArray(p.required)) required.push(...p.required);
  }
  if (Object.keys(properties).length > 0) out.properties = properties;
  if (required.length > 0) out.required = required;
  return out;
}

const NUMBER_FIRST = '-0123456789';
const utf8 = new TextEncoder();

/** Fills a first-byte choice with the branches' nodes; literals a typed branch already covers are dropped. */
function fill(node: GNode, b: Branches, syn: ValueSyntax): GNode {
  let number = b.number;
  // An enum of non-integers next to an integer type widens it rather than losing the values.
  if (number === INTEGER_NUMBER && b.literals.some((l) => /^-?\d/.test(l) && !/^-?\d+$/.test(l))) number = NUMBER;
  const typed: [GNode | null, string][] = [
    [b.string, syn.stringFirst],
    [number, NUMBER_FIRST],
    [b.object, '{'],
    [b.array, '['],
  ];
  const covered = (lit: string) => typed.some(([n, first]) => n !== null && first.includes(lit[0]));
  const spell = (l: string) => {
    const v: unknown = JSON.parse(l);
    return [syn.literal(v), ...(syn.variants?.(v) ?? [])];
  };
  const literals = [...new Set(b.literals.flatMap(spell))].filter((l) => !covered(l));
  for (const [n, first] of typed) if (n) altSet(node, first, n);
  if (literals.length > 0) {
    const sw = literalSwitch(literals);
    altSet(node, [...new Set(literals.map((l) => utf8.encode(l)[0]))], sw);
  }
  // A schema nothing satisfies (an empty enum merged away) would leave the model no token at all.
  if (!node.kids.some((k) => k !== null)) fill(node, ANY(syn), syn);
  return node;
}
