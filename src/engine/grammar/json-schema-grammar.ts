// JSON schema → grammar nodes, for the subset tool definitions use:
//   type (one or a list), properties / required (only listed keys; optional ones may be left out),
//   additionalProperties (a schema, when there are no properties), items, minItems / maxItems,
//   enum / const, anyOf / oneOf (merged by JSON type), nullable, allOf (merged), local $ref.
// Anything else (pattern, format, minimum, string lengths, tuples, …) is not enforced: the value
// is any JSON of the right type, or any JSON value at all when the type is unknown.
//
// Every value compiles to a choice on its first byte (`"` string, `{` object, …), so matching is
// deterministic. Alternatives of one JSON type are merged (both objects → any object) rather than
// tried in turn: looser than the schema in that rare case, never stricter.

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
  literalSwitch,
  NUMBER,
  type GNode,
} from './nodes.js';

type Schema = Record<string, unknown>;

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
const ANY = (): Branches => ({ string: FREE_STRING, number: NUMBER, object: ANY_OBJECT, array: ANY_ARRAY, literals: ['true', 'false', 'null'] });

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

export class SchemaCompiler {
  private readonly done = new Map<Schema, GNode>();
  /** $refs being compiled: their node exists (so recursion can point at it) but is not filled yet. */
  private readonly pendingRefs = new Map<string, GNode>();
  private readonly refs = new Map<string, GNode>();

  /** `root` is the document local `$ref`s point into (a tool's parameters schema). */
  constructor(private readonly root: unknown) {}

  /** The node matching one JSON value valid for `schema`. */
  compile(schema: unknown): GNode {
    if (!isSchema(schema) || Object.keys(schema).length === 0) return ANY_VALUE;
    const ref = typeof schema.$ref === 'string' ? schema.$ref : null;
    if (ref !== null) {
      const known = this.refs.get(ref) ?? this.pendingRefs.get(ref);
      if (known) return known;
      const node = alt();
      this.pendingRefs.set(ref, node);
      const target = this.resolve(ref);
      fill(node, target === undefined ? ANY() : this.branches(target));
      this.pendingRefs.delete(ref);
      this.refs.set(ref, node);
      return node;
    }
    let node = this.done.get(schema);
    if (!node) {
      const b = this.branches(schema);
      node = isAny(b) ? ANY_VALUE : fill(alt(), b);
      this.done.set(schema, node);
    }
    return node;
  }

  /** What `schema` admits, by JSON type. */
  branches(schema: unknown): Branches {
    if (!isSchema(schema)) return ANY();
    if (typeof schema.$ref === 'string') {
      // A $ref inside its own definition (directly, through anyOf) cannot be split by type yet.
      if (this.pendingRefs.has(schema.$ref)) return ANY();
      const target = this.resolve(schema.$ref);
      return target === undefined ? ANY() : this.branches(target);
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
      for (const a of alternatives) out = merge(out, this.branches(a));
      if (schema.nullable === true) out.literals.push('null');
      return out;
    }

    const types = Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : inferTypes(schema);
    if (types.length === 0) return ANY();
    const out = NONE();
    for (const t of types) {
      if (t === 'string') out.string = FREE_STRING;
      else if (t === 'integer') out.number ??= INTEGER_NUMBER;
      else if (t === 'number') out.number = NUMBER;
      else if (t === 'boolean') out.literals.push('true', 'false');
      else if (t === 'null') out.literals.push('null');
      else if (t === 'object') out.object = this.object(schema);
      else if (t === 'array') out.array = this.array(schema);
      else return ANY(); // an unknown type name: do not guess
    }
    if (schema.nullable === true) out.literals.push('null');
    return out;
  }

  private object(schema: Schema): GNode {
    const props = isSchema(schema.properties) ? Object.entries(schema.properties) : [];
    if (props.length === 0) {
      const extra = schema.additionalProperties;
      return isSchema(extra) && Object.keys(extra).length > 0 ? freeObject(this.compile(extra)) : ANY_OBJECT;
    }
    const keys = props.map(([k]) => k);
    const required = Array.isArray(schema.required) ? schema.required : [];
    let bits = 0;
    keys.forEach((k, i) => {
      if (required.includes(k)) bits |= seenBit(i);
    });
    return jsonObject(
      keys,
      props.map(([, s]) => this.compile(s)),
      bits,
    );
  }

  private array(schema: Schema): GNode {
    const items = isSchema(schema.items) ? this.compile(schema.items) : ANY_VALUE;
    const min = count(schema.minItems) ?? 0;
    const max = count(schema.maxItems) ?? -1;
    if (items === ANY_VALUE && min === 0 && max < 0) return ANY_ARRAY;
    return jsonArray(items, min, max < 0 ? -1 : Math.max(max, min));
  }

  private resolve(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined; // remote references are not fetched
    let at: unknown = this.root;
    for (const raw of ref.slice(1).split('/').filter((p) => p !== '')) {
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

/** The node for a tool's parameters: an object (any object when no schema is given). */
export function parametersNode(parameters: unknown): GNode {
  if (!isSchema(parameters)) return ANY_OBJECT;
  return new SchemaCompiler(parameters).compile(parameters);
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

function isAny(b: Branches): boolean {
  return b.string === FREE_STRING && b.number === NUMBER && b.object === ANY_OBJECT && b.array === ANY_ARRAY && ['true', 'false', 'null'].every((l) => b.literals.includes(l));
}

/** Both schemas' values. Two structures of one type merge into the unconstrained one. */
function merge(a: Branches, b: Branches): Branches {
  const one = (x: GNode | null, y: GNode | null, loose: GNode) => (x && y && x !== y ? loose : (x ?? y));
  return {
    string: one(a.string, b.string, FREE_STRING),
    number: a.number === NUMBER || b.number === NUMBER ? NUMBER : (a.number ?? b.number),
    object: one(a.object, b.object, ANY_OBJECT),
    array: one(a.array, b.array, ANY_ARRAY),
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

const FIRST_BYTES = { string: '"', number: '-0123456789', object: '{', array: '[' } as const;

/** Fills a first-byte choice with the branches' nodes; literals a typed branch already covers are dropped. */
function fill(node: GNode, b: Branches): GNode {
  let number = b.number;
  // An enum of non-integers next to an integer type widens it rather than losing the values.
  if (number === INTEGER_NUMBER && b.literals.some((l) => /^-?\d/.test(l) && !/^-?\d+$/.test(l))) number = NUMBER;
  const typedNodes = { string: b.string, number, object: b.object, array: b.array };
  const covered = (lit: string) =>
    (Object.keys(FIRST_BYTES) as (keyof typeof FIRST_BYTES)[]).some((k) => typedNodes[k] !== null && FIRST_BYTES[k].includes(lit[0]));
  const literals = [...new Set(b.literals)].filter((l) => !covered(l));
  for (const k of Object.keys(FIRST_BYTES) as (keyof typeof FIRST_BYTES)[]) {
    const n = typedNodes[k];
    if (n) altSet(node, FIRST_BYTES[k], n);
  }
  if (literals.length > 0) {
    const sw = literalSwitch(literals);
    altSet(node, [...new Set(literals.map((l) => l.charCodeAt(0)))], sw);
  }
  // A schema nothing satisfies (an empty enum merged away) would leave the model no token at all.
  if (!node.kids.some((k) => k !== null)) fill(node, ANY());
  return node;
}
