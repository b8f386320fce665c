// JSON schema → grammar nodes. What is enforced (docs/structured-outputs.md has the full list):
//   type (one or a list; without one, the types its keywords constrain, else any), enum / const,
//   nullable, properties / required (only listed keys; optional ones may be left out; a required
//   key that is not listed takes additionalProperties' schema), additionalProperties (false, or a
//   schema: the values of keys not listed; in JSON, other syntaxes write listed keys only),
//   items / prefixItems (and draft-07 tuple
//   items / additionalItems), minItems / maxItems, anyOf / oneOf, allOf (merged), local $ref /
//   $defs / definitions (recursive), pattern, format (string-formats.ts), minLength / maxLength,
//   minimum / maximum / exclusive bounds (number-ranges.ts), multipleOf 1.
// Annotations (title, description, default, examples, …) are ignored; any other keyword is a
// SchemaError (schema-keywords.ts), as is a schema no value satisfies.
//
// Looser than the schema, by design (documented): oneOf is read as anyOf; where two anyOf
// alternatives both admit objects (or both arrays), those are checked against the schema outside
// the anyOf only; two string alternatives with different length bounds take the wider bounds.
// Stricter than the schema (never invalid output): listed properties close an object unless
// additionalProperties is a schema (true or absent: listed keys only); other keys, and strings
// where a pattern or format applies, are written in JSON.stringify's spelling; numbers within
// bounds have no exponent; an enum string outside a string alternative's length bounds is left out.
//
// Every value compiles to a choice on its first byte (`"` string, `{` object, …), so matching is
// deterministic. The values are spelled in a ValueSyntax: JSON by default; formats whose arguments
// are not JSON (Python literals, Gemma's relaxed objects) bring their own strings, literals and
// object syntax (value-syntaxes.ts); patterns, formats and string lengths are enforced in JSON
// only (the others' strings are free), numbers everywhere.

import { SchemaError } from './errors.js';
import { seenBit } from './literals.js';
import {
  alt,
  altSet,
  ANY_ARRAY,
  ANY_OBJECT,
  ANY_VALUE,
  freeObject,
  FREE_STRING,
  jsonArray,
  jsonObject,
  Kind,
  literalSwitch,
  type GNode,
} from './nodes.js';
import { enumValues } from './schema-enum.js';
import {
  admittedTypes,
  checkKeywords,
  constraining,
  count,
  countRange,
  isSchema,
  mergeAll,
  numberBounds,
  pointer,
  type Schema,
} from './schema-keywords.js';
import {
  ANY_NUMBER,
  ANY_STRING,
  isAnyNumber,
  isAnyString,
  jsonStringNode,
  numberNode,
  stringSpec,
  unionStrings,
  withString,
  type NumberSpec,
  type StringSpec,
} from './schema-values.js';

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
  /** Strings are JSON strings: patterns, formats and lengths can be enforced. */
  readonly jsonStrings?: boolean;
  /** The spelling of a JSON value (enum and const members, true, false, null). */
  literal(value: unknown): string;
  /** Other spellings a model may use for the same value (a string in the other quotes). */
  variants?(value: unknown): string[];
  /**
   * An object with these keys (each at most once; optional ones may be left out); with `extra`,
   * other keys too, their values `extra` (a syntax may leave them out: JSON writes them).
   */
  object(keys: readonly string[], values: GNode[], requiredBits: number, extra?: GNode | null): GNode;
  /** An object with any keys, whose values match `value`. */
  freeObject(value: GNode): GNode;
}

export const JSON_SYNTAX: ValueSyntax = {
  string: FREE_STRING,
  stringFirst: '"',
  any: ANY_VALUE,
  anyObject: ANY_OBJECT,
  anyArray: ANY_ARRAY,
  jsonStrings: true,
  literal: (v) => JSON.stringify(v),
  object: jsonObject,
  freeObject: (value) => freeObject(value),
};

/**
 * The listed properties of an object schema (compiled) and the values of any other keys (`extra`,
 * additionalProperties as a schema; null: no other keys), or the schema of its free values.
 */
export type ObjectParts =
  { free: false; keys: string[]; values: GNode[]; required: string[]; extra: GNode | null } | { free: true; value: GNode };

/** The JSON types a schema admits: strings and numbers as specs (they union exactly), structures as nodes. */
export interface Branches {
  string: StringSpec | null;
  number: NumberSpec | null;
  object: GNode | null;
  array: GNode | null;
  /** Exact JSON texts (enum/const values, true, false, null). */
  literals: string[];
}

const NONE = (): Branches => ({ string: null, number: null, object: null, array: null, literals: [] });
const ANY = (syn: ValueSyntax): Branches => ({
  string: ANY_STRING,
  number: ANY_NUMBER,
  object: syn.anyObject,
  array: syn.anyArray,
  literals: ['true', 'false', 'null'],
});

export class SchemaCompiler {
  private readonly done = new Map<Schema, GNode>();
  /** $refs being compiled: their node exists (so recursion can point at it) but is not filled yet. */
  private readonly pendingRefs = new Map<string, GNode>();
  private readonly refs = new Map<string, GNode>();
  /** $refs whose branches are being worked out (a union that reaches its own $ref again adds nothing). */
  private readonly expanding = new Set<string>();

  /** `root` is the document local `$ref`s point into (a tool's parameters schema). */
  constructor(
    private readonly root: unknown,
    readonly syntax: ValueSyntax = JSON_SYNTAX,
  ) {}

  /** The node matching one value valid for `schema`; SchemaError when none is. */
  compile(schema: unknown, path = '#'): GNode {
    const node = this.compileOrNull(schema, path);
    if (node === null) throw new SchemaError(`unsatisfiable schema at ${path}: no value is valid`);
    return node;
  }

  /** The node matching one value valid for `schema`; null when none is. */
  compileOrNull(schema: unknown, path = '#'): GNode | null {
    const syn = this.syntax;
    if (schema === true || (isSchema(schema) && Object.keys(schema).length === 0)) return syn.any;
    if (isSchema(schema) && typeof schema.$ref === 'string' && constraining(schema).length === 1) {
      checkKeywords(schema, path);
      const ref = schema.$ref;
      const known = this.refs.get(ref) ?? this.pendingRefs.get(ref);
      if (known) return known;
      const target = this.resolve(ref, path);
      const node = alt();
      this.pendingRefs.set(ref, node);
      const filled = this.fill(node, this.branches(target, ref), ref);
      this.pendingRefs.delete(ref);
      if (filled === null) throw new SchemaError(`unsatisfiable schema at ${ref}: no value is valid`);
      this.refs.set(ref, node);
      return node;
    }
    if (!isSchema(schema)) return this.fill(alt(), this.branches(schema, path), path);
    let node = this.done.get(schema);
    if (!node) {
      const b = this.branches(schema, path);
      const n = this.isAny(b) ? syn.any : this.fill(alt(), b, path);
      if (n === null) return null;
      this.done.set(schema, (node = n));
    }
    return node;
  }

  /** What `schema` admits, by JSON type. */
  branches(schema: unknown, path = '#'): Branches {
    const syn = this.syntax;
    if (schema === true) return ANY(syn);
    if (schema === false) return NONE();
    if (!isSchema(schema)) throw new SchemaError(`the schema at ${path} must be an object or a boolean`);
    checkKeywords(schema, path);
    if (typeof schema.$ref === 'string' || Array.isArray(schema.allOf)) {
      const parts = this.allOfParts(schema, path);
      if (parts === null) return NONE(); // a $ref to itself: adds nothing to the values found another way
      const ref = typeof schema.$ref === 'string' ? schema.$ref : null;
      if (ref !== null) this.expanding.add(ref);
      try {
        return parts.length === 1 ? this.branches(parts[0][0], parts[0][1]) : this.branches(mergeAll(parts), path);
      } finally {
        if (ref !== null) this.expanding.delete(ref);
      }
    }
    const types = admittedTypes(schema, path);
    if (Array.isArray(schema.anyOf) && Array.isArray(schema.oneOf)) {
      // Both must hold: every pairing of their alternatives.
      const { anyOf, oneOf, ...rest } = schema;
      return this.branches({ ...rest, allOf: [{ anyOf }, { oneOf }] }, path);
    }
    // anyOf / oneOf first: an enum beside them joins each alternative (and is checked against it).
    const alternatives = [...(Array.isArray(schema.anyOf) ? schema.anyOf : []), ...(Array.isArray(schema.oneOf) ? schema.oneOf : [])];
    if (alternatives.length > 0) return this.union(schema, alternatives, path);
    if ('const' in schema || Array.isArray(schema.enum)) {
      const values = 'const' in schema ? [schema.const] : (schema.enum as unknown[]);
      return { ...NONE(), literals: jsonTexts(enumValues(values, schema, types, path)) };
    }

    if (types === null) return ANY(syn);
    const out = NONE();
    for (const t of types) {
      if (t === 'string')
        out.string = stringSpec(str(schema.pattern), str(schema.format), ...countRange(schema, 'minLength', 'maxLength', path), path);
      else if (t === 'integer' || t === 'number')
        out.number = [...(out.number ?? []), { range: numberBounds(schema, t === 'integer', path) }];
      else if (t === 'boolean') out.literals.push('true', 'false');
      else if (t === 'null') out.literals.push('null');
      else if (t === 'object') out.object = this.object(schema, path);
      else out.array = this.array(schema, path);
    }
    return out;
  }

  /** anyOf / oneOf: each alternative with the rest of the schema, joined. */
  private union(schema: Schema, alternatives: unknown[], path: string): Branches {
    const { anyOf: _a, oneOf: _o, ...rest } = schema;
    const key = Array.isArray(schema.anyOf) ? 'anyOf' : 'oneOf';
    const own = constraining(rest).filter((k) => k !== 'nullable');
    let out = NONE();
    const structures = { object: 0, array: 0 };
    // An alternative no value satisfies (with the rest of the schema) adds nothing; only when none
    // is satisfiable is its error the schema's.
    let firstError: SchemaError | null = null;
    alternatives.forEach((a, i) => {
      const at = `${path}/${key}/${i}`;
      let b: Branches;
      try {
        b = own.length === 0 ? this.branches(a, at) : this.branches({ allOf: [rest, a] }, at);
      } catch (err) {
        if (!(err instanceof SchemaError && err.message.startsWith('unsatisfiable'))) throw err;
        firstError ??= err;
        return;
      }
      if (b.object) structures.object++;
      if (b.array) structures.array++;
      out = merge(out, b);
    });
    if (firstError && !out.string && !out.number && !out.object && !out.array && out.literals.length === 0) throw firstError;
    // Two alternatives with objects (or arrays): the rest of the schema alone judges them.
    if (structures.object > 1 || structures.array > 1) {
      const outer = own.length === 0 ? ANY(this.syntax) : this.branches(rest, path);
      if (structures.object > 1) out.object = outer.object ?? this.syntax.anyObject;
      if (structures.array > 1) out.array = outer.array ?? this.syntax.anyArray;
    }
    if (schema.nullable === true) out.literals.push('null');
    return out;
  }

  private object(schema: Schema, path: string): GNode {
    const parts = this.objectParts(schema, path);
    if (parts.free) return parts.value === this.syntax.any ? this.syntax.anyObject : this.syntax.freeObject(parts.value);
    return this.syntax.object(parts.keys, parts.values, requiredBits(parts.keys, parts.required), parts.extra);
  }

  /**
   * The properties of an object schema, compiled (local $refs and allOf resolved), for a caller
   * that spells the object itself (Python keyword arguments, XML parameters).
   */
  objectParts(schema: unknown, path = '#'): ObjectParts {
    if (!isSchema(schema)) return { free: true, value: this.syntax.any };
    checkKeywords(schema, path);
    let o = schema;
    if (typeof schema.$ref === 'string' || Array.isArray(schema.allOf)) {
      const parts = this.allOfParts(schema, path);
      if (parts === null) return { free: true, value: this.syntax.any };
      o = parts.length === 1 ? parts[0][0] : mergeAll(parts);
      if (parts.length === 1) path = parts[0][1];
    }
    const extra = o.additionalProperties;
    const required = Array.isArray(o.required) ? o.required.filter((k): k is string => typeof k === 'string') : [];
    // Listed properties (even none, as tools without arguments declare) or `additionalProperties:
    // false` close the object to those keys; otherwise any keys.
    if (!isSchema(o.properties) && extra !== false && required.length === 0) {
      this.checkPropertyCounts(o, null, path);
      const value = extra === undefined || extra === true ? this.syntax.any : this.compileOrNull(extra, `${path}/additionalProperties`);
      // No value is valid for extra keys: the only object is {}.
      if (value === null) return { free: false, keys: [], values: [], required: [], extra: null };
      return { free: true, value };
    }
    const keys: string[] = [];
    const values: GNode[] = [];
    const props = isSchema(o.properties) ? Object.entries(o.properties) : [];
    for (const k of required) {
      if (props.some(([p]) => p === k)) continue;
      if (extra === false)
        throw new SchemaError(`unsatisfiable schema at ${path}: required property '${k}' is not allowed (additionalProperties is false)`);
      props.push([k, extra === undefined ? true : extra]);
    }
    for (const [k, v] of props) {
      const at = pointer(path, 'properties', k);
      const node = this.compileOrNull(v, at);
      if (node === null) {
        if (required.includes(k)) throw new SchemaError(`unsatisfiable schema at ${at}: required, but no value is valid`);
        continue; // a key no value fits is left out
      }
      keys.push(k);
      values.push(node);
    }
    this.checkPropertyCounts(o, keys, path);
    // additionalProperties as a schema: other keys with its values (true or absent: listed keys only).
    const extraNode = isSchema(extra) && keys.length > 0 ? this.compileOrNull(extra, `${path}/additionalProperties`) : null;
    return { free: false, keys, values, required, extra: extraNode === this.syntax.any ? null : extraNode };
  }

  /** minProperties / maxProperties: only where the keys already guarantee them. */
  private checkPropertyCounts(o: Schema, keys: string[] | null, path: string): void {
    const min = count(o, 'minProperties', path);
    const max = count(o, 'maxProperties', path);
    const required = Array.isArray(o.required) ? new Set(o.required).size : 0;
    if (min !== null && min > required)
      throw new SchemaError(`unsupported JSON Schema keyword 'minProperties' at ${path} (beyond the required keys)`);
    if (max !== null && (keys === null || max < keys.length))
      throw new SchemaError(`unsupported JSON Schema keyword 'maxProperties' at ${path} (below the listed keys)`);
  }

  private array(schema: Schema, path: string): GNode {
    const syn = this.syntax;
    const [min, maxItems] = countRange(schema, 'minItems', 'maxItems', path);
    let max = maxItems;
    const tuple = Array.isArray(schema.items);
    const prefixSchemas = (tuple ? schema.items : schema.prefixItems) as unknown[] | undefined;
    if (prefixSchemas !== undefined && !Array.isArray(prefixSchemas)) throw new SchemaError(`'prefixItems' must be a list at ${path}`);
    const rest = tuple ? schema.additionalItems : schema.items;
    const prefix: GNode[] = [];
    for (const [i, s] of (prefixSchemas ?? []).entries()) {
      const node = this.compileOrNull(s, pointer(path, tuple ? 'items' : 'prefixItems', i));
      if (node === null) {
        max = max < 0 ? i : Math.min(max, i); // no array has an item here
        break;
      }
      prefix.push(node);
    }
    const items =
      rest === undefined || rest === true ? syn.any : this.compileOrNull(rest, `${path}/${tuple ? 'additionalItems' : 'items'}`);
    if (items === null) max = max < 0 ? prefix.length : Math.min(max, prefix.length);
    if (max >= 0 && min > max) throw new SchemaError(`unsatisfiable schema at ${path}: minItems ${min} but at most ${max} items are valid`);
    if (prefix.length === 0 && items === syn.any && min === 0 && max < 0) return syn.anyArray;
    return jsonArray(items ?? syn.any, min, max, false, prefix);
  }

  /**
   * The schemas a $ref / allOf stands for, resolved and flattened, with their paths; null when a
   * $ref points back into a definition being compiled (a union's own recursion adds nothing).
   */
  private allOfParts(schema: Schema, path: string, depth = 0): [Schema, string][] | null {
    if (depth > 32) throw new SchemaError(`$ref chain too long at ${path}`);
    const out: [Schema, string][] = [];
    const { allOf, $ref, ...rest } = schema;
    if (typeof $ref === 'string') {
      if (this.pendingRefs.has($ref) || this.expanding.has($ref)) {
        if (constraining(rest).length > 0 || Array.isArray(allOf) || depth > 0)
          throw new SchemaError(`unsupported at ${path}: a recursive $ref '${$ref}' combined with other keywords`);
        return null;
      }
      const target = this.resolve($ref, path);
      if (target === false) throw new SchemaError(`unsatisfiable schema at ${$ref}: false`);
      if (isSchema(target)) {
        checkKeywords(target, $ref);
        const inner =
          typeof target.$ref === 'string' || Array.isArray(target.allOf)
            ? this.allOfParts(target, $ref, depth + 1)
            : [[target, $ref] as [Schema, string]];
        if (inner === null) return null;
        out.push(...inner);
      }
    }
    if (constraining(rest).length > 0 || out.length === 0) out.push([rest, path]);
    if (Array.isArray(allOf)) {
      allOf.forEach((part, i) => {
        const at = `${path}/allOf/${i}`;
        if (part === false) throw new SchemaError(`unsatisfiable schema at ${at}: false`);
        if (!isSchema(part)) return;
        checkKeywords(part, at);
        const inner = this.allOfParts(part, at, depth + 1);
        if (inner === null) throw new SchemaError(`unsupported at ${at}: a recursive $ref inside allOf`);
        out.push(...inner);
      });
    }
    return out;
  }

  private resolve(ref: string, path: string): unknown {
    if (!ref.startsWith('#'))
      throw new SchemaError(`$ref '${ref}' does not resolve (at ${path}): only local references (#/…) are supported`);
    let at: unknown = this.root;
    for (const raw of ref
      .slice(1)
      .split('/')
      .filter((p) => p !== '')) {
      const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      at = Array.isArray(at) ? at[Number(part)] : isSchema(at) && Object.hasOwn(at, part) ? at[part] : undefined;
      if (at === undefined) throw new SchemaError(`$ref '${ref}' does not resolve (at ${path})`);
    }
    return at;
  }

  private isAny(b: Branches): boolean {
    const syn = this.syntax;
    return (
      b.string !== null &&
      isAnyString(b.string) &&
      b.number !== null &&
      isAnyNumber(b.number) &&
      b.object === syn.anyObject &&
      b.array === syn.anyArray &&
      ['true', 'false', 'null'].every((l) => b.literals.includes(l))
    );
  }

  /** The number node of a spec (null: none), for callers that place numbers themselves (XML values). */
  numberNode(spec: NumberSpec | null): GNode | null {
    return spec === null ? null : numberNode(spec);
  }

  /**
   * Fills a first-byte choice with the branches' nodes; enum values join the typed branch that
   * covers them (exactly, for strings and numbers). Null when no value is valid.
   */
  private fill(node: GNode, b: Branches, path: string): GNode | null {
    const syn = this.syntax;
    let string = b.string;
    let number = b.number;
    const literals: string[] = [];
    for (const text of new Set(b.literals)) {
      const v: unknown = JSON.parse(text);
      if (typeof v === 'string' && string) {
        if (syn.jsonStrings) string = withString(string, v) ?? string;
      } else if (typeof v === 'number' && number) {
        number = [...number, { text }];
      } else if (v === null || typeof v !== 'object' || !(Array.isArray(v) ? b.array : b.object)) {
        literals.push(...[syn.literal(v), ...(syn.variants?.(v) ?? [])]);
      }
    }
    const typed: [GNode | null, string][] = [
      [string === null ? null : syn.jsonStrings ? jsonStringNode(string, path) : syn.string, syn.stringFirst],
      [this.numberNode(number), NUMBER_FIRST],
      [b.object, '{'],
      [b.array, '['],
    ];
    const covered = (lit: string) => typed.some(([n, first]) => n !== null && first.includes(lit[0]));
    const open = [...new Set(literals)].filter((l) => !covered(l));
    for (const [n, first] of typed) if (n) altSet(node, first, n);
    if (open.length > 0) {
      const sw = literalSwitch(open);
      altSet(node, [...new Set(open.map((l) => utf8.encode(l)[0]))], sw);
    }
    return node.kids.some((k) => k !== null) ? node : null;
  }
}

/** The node for a tool's parameters: a JSON object (any object when no schema is given). */
export function parametersNode(parameters: unknown): GNode {
  if (!isSchema(parameters)) return ANY_OBJECT;
  return objectBranch(new SchemaCompiler(parameters).compile(parameters), ANY_OBJECT);
}

/** One JSON value valid for `schema` (true or {}: any value), the schema being its own $ref root. */
export function jsonValueNode(schema: unknown): GNode {
  if (schema === false) throw new SchemaError('unsatisfiable schema at #: false');
  return new SchemaCompiler(schema).compile(schema);
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

/** Both schemas' values. Two structures of one type merge into the unconstrained one. */
function merge(a: Branches, b: Branches): Branches {
  const one = (x: GNode | null, y: GNode | null) => (x && y && x !== y ? x : (x ?? y));
  return {
    string: unionStrings(a.string, b.string),
    number: a.number && b.number ? [...a.number, ...b.number] : (a.number ?? b.number),
    object: one(a.object, b.object),
    array: one(a.array, b.array),
    literals: [...a.literals, ...b.literals],
  };
}

/** JSON texts of enum values (undefined and functions have none). */
function jsonTexts(values: unknown[]): string[] {
  return values.map((v) => JSON.stringify(v) as string | undefined).filter((t): t is string => typeof t === 'string');
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

const NUMBER_FIRST = '-0123456789';
const utf8 = new TextEncoder();
