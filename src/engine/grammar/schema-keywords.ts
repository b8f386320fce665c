// The JSON Schema keywords the grammar understands, checked and read: which keywords are allowed,
// what their values must be, the bounds they set, and allOf merged into one schema. Every problem
// is a SchemaError naming the keyword and where it is (`at #/properties/a`).

import { SchemaError } from './errors.js';
import type { NumberBounds } from './number-ranges.js';

export type Schema = Record<string, unknown>;

export const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords that only describe: accepted, ignored. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  '$schema',
  '$id',
  '$comment',
  '$anchor',
  'deprecated',
  'readOnly',
  'writeOnly',
  'strict',
  'discriminator',
  'contentMediaType',
  'contentEncoding',
  '$defs',
  'definitions',
]);

/** The keywords of `s` that constrain values (not annotations). */
export const constraining = (s: Schema): string[] => Object.keys(s).filter((k) => !ANNOTATIONS.has(k));

/** Keywords the grammar enforces (nullable: OpenAPI's, adds null). */
const ENFORCED = new Set([
  'type',
  'enum',
  'const',
  'nullable',
  'properties',
  'required',
  'additionalProperties',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);

export const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const;
export type TypeName = (typeof TYPES)[number];

/** Keywords that constrain one type only: a schema without `type` admits that type when it has them. */
const TYPE_KEYWORDS: [TypeName, string[]][] = [
  ['string', ['pattern', 'format', 'minLength', 'maxLength']],
  ['number', ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']],
  ['object', ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']],
  ['array', ['items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems', 'uniqueItems']],
];

export const pointer = (path: string, ...parts: (string | number)[]): string =>
  parts.reduce<string>((p, k) => `${p}/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`, path);

/** Throws SchemaError for a keyword the grammar does not know or cannot enforce. */
export function checkKeywords(s: Schema, path: string): void {
  for (const k of Object.keys(s)) {
    if (!ANNOTATIONS.has(k) && !ENFORCED.has(k)) throw new SchemaError(`unsupported JSON Schema keyword '${k}' at ${path}`);
  }
  if (s.uniqueItems !== undefined && s.uniqueItems !== false && !(count(s, 'maxItems', path) !== null && count(s, 'maxItems', path)! <= 1))
    throw new SchemaError(`unsupported JSON Schema keyword 'uniqueItems' at ${path}`);
  if (s.required !== undefined && !(Array.isArray(s.required) && s.required.every((k) => typeof k === 'string')))
    throw new SchemaError(`'required' must be a list of property names at ${path}`);
  for (const k of ['anyOf', 'oneOf', 'allOf']) {
    if (s[k] !== undefined && !(Array.isArray(s[k]) && s[k].length > 0))
      throw new SchemaError(`'${k}' must be a non-empty list at ${path}`);
  }
  if (s.enum !== undefined && !Array.isArray(s.enum)) throw new SchemaError(`'enum' must be a list at ${path}`);
  if (Array.isArray(s.enum) && s.enum.length === 0) throw new SchemaError(`unsatisfiable schema at ${path}: empty enum`);
  if (s.pattern !== undefined && typeof s.pattern !== 'string') throw new SchemaError(`'pattern' must be a string at ${path}`);
  if (s.format !== undefined && typeof s.format !== 'string') throw new SchemaError(`'format' must be a string at ${path}`);
  if (s.$ref !== undefined && typeof s.$ref !== 'string') throw new SchemaError(`'$ref' must be a string at ${path}`);
  for (const k of ['properties', '$defs', 'definitions']) {
    if (s[k] !== undefined && !isSchema(s[k])) throw new SchemaError(`'${k}' must be an object at ${path}`);
  }
}

/** The declared types (validated); null when the schema declares none. */
export function declaredTypeList(s: Schema, path: string): TypeName[] | null {
  if (s.type === undefined) return null;
  const list = Array.isArray(s.type) ? s.type : [s.type];
  for (const t of list) {
    if (typeof t !== 'string' || !(TYPES as readonly string[]).includes(t))
      throw new SchemaError(`unknown type ${typeof t === 'string' ? `'${t}'` : JSON.stringify(t)} at ${path}`);
  }
  if (list.length === 0) throw new SchemaError(`unsatisfiable schema at ${path}: an empty type list`);
  return list as TypeName[];
}

/** The types a schema admits: declared ones (plus null when nullable), else those its keywords constrain; null: any. */
export function admittedTypes(s: Schema, path: string): Set<TypeName> | null {
  let types = declaredTypeList(s, path);
  if (types === null) {
    const inferred = TYPE_KEYWORDS.filter(([, kws]) => kws.some((k) => k in s)).map(([t]) => t);
    if (inferred.length === 0) return null;
    types = inferred;
  }
  const out = new Set(types);
  if (s.nullable === true) out.add('null');
  return out;
}

/** A non-negative integer keyword, or null when absent. */
export function count(s: Schema, key: string, path: string): number | null {
  const v = s[key];
  if (v === undefined) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new SchemaError(`'${key}' must be a non-negative integer at ${path}`);
  return v;
}

/** lo..hi (hi -1: none) from a min and a max keyword; SchemaError when lo > hi. */
export function countRange(s: Schema, minKey: string, maxKey: string, path: string): [number, number] {
  const lo = count(s, minKey, path) ?? 0;
  const hi = count(s, maxKey, path) ?? -1;
  if (hi >= 0 && lo > hi) throw new SchemaError(`unsatisfiable schema at ${path}: ${minKey} ${lo} > ${maxKey} ${hi}`);
  return [lo, hi];
}

/** Numeric bounds (both draft-04 boolean and later numeric exclusive forms). */
export function numberBounds(s: Schema, integer: boolean, path: string): NumberBounds {
  const num = (k: string): number | null => {
    const v = s[k];
    if (v === undefined || typeof v === 'boolean') return null;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new SchemaError(`'${k}' must be a number at ${path}`);
    return v;
  };
  const b: NumberBounds = { integer, min: null, max: null, exclusiveMin: false, exclusiveMax: false };
  const lower = (v: number | null, ex: boolean) => {
    if (v !== null && (b.min === null || v > b.min || (v === b.min && ex))) [b.min, b.exclusiveMin] = [v, ex];
  };
  const upper = (v: number | null, ex: boolean) => {
    if (v !== null && (b.max === null || v < b.max || (v === b.max && ex))) [b.max, b.exclusiveMax] = [v, ex];
  };
  lower(num('minimum'), s.exclusiveMinimum === true);
  lower(num('exclusiveMinimum'), true);
  upper(num('maximum'), s.exclusiveMaximum === true);
  upper(num('exclusiveMaximum'), true);
  if (b.min !== null && b.max !== null && (b.min > b.max || (b.min === b.max && (b.exclusiveMin || b.exclusiveMax))))
    throw new SchemaError(`unsatisfiable schema at ${path}: minimum ${b.min} > maximum ${b.max}`);
  const m = s.multipleOf;
  if (m !== undefined) {
    if (typeof m !== 'number' || !(m > 0)) throw new SchemaError(`'multipleOf' must be a positive number at ${path}`);
    // Only multiples of 1 (integers) are enforced.
    if (m !== 1 || (!integer && !('type' in s)))
      throw new SchemaError(`unsupported JSON Schema keyword 'multipleOf' at ${path} (only multipleOf 1)`);
    b.integer = true;
  }
  return b;
}

/**
 * allOf as one schema: types, enums and properties intersected, required keys joined, the
 * tighter of each bound. Two different patterns or formats cannot be combined (SchemaError).
 * `parts` are resolved schemas (no $ref at their top) with their paths.
 */
export function mergeAll(parts: [Schema, string][]): Schema {
  const out: Schema = {};
  const set = (k: string, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  // Types: intersect (integer within number).
  const typeSets: Set<string>[] = [];
  for (const [p, path] of parts) {
    const t = declaredTypeList(p, path);
    if (t === null) continue;
    const mine = new Set<string>(t);
    if (p.nullable === true) mine.add('null');
    if (mine.has('number')) mine.add('integer');
    typeSets.push(mine);
  }
  if (typeSets.length > 0) {
    const all = new Set([...typeSets[0]].filter((x) => typeSets.every((t) => t.has(x))));
    if (all.has('number') && all.has('integer')) all.delete('integer');
    const list = [...all];
    if (list.length === 0) throw new SchemaError(`unsatisfiable schema at ${parts[0][1]}: allOf types have nothing in common`);
    set('type', list);
  }
  // enum / const: the values every part allows.
  let values: unknown[] | null = null;
  for (const [p] of parts) {
    const mine = 'const' in p ? [p.const] : Array.isArray(p.enum) ? p.enum : null;
    if (mine === null) continue;
    values = values === null ? mine : values.filter((v) => mine.some((w) => JSON.stringify(w) === JSON.stringify(v)));
  }
  if (values !== null) {
    if (values.length === 0) throw new SchemaError(`unsatisfiable schema at ${parts[0][1]}: allOf enums have nothing in common`);
    set('enum', values);
  }
  // Bounds: the tighter one.
  for (const [k, pick] of [
    ['minLength', Math.max],
    ['maxLength', Math.min],
    ['minItems', Math.max],
    ['maxItems', Math.min],
    ['minProperties', Math.max],
    ['maxProperties', Math.min],
  ] as const) {
    const vs = parts.map(([p]) => p[k]).filter((v): v is number => typeof v === 'number');
    if (vs.length > 0) set(k, pick(...vs));
  }
  const bounds = parts.map(([p, path]) => numberBounds({ ...p, multipleOf: undefined }, false, path));
  const lo = bounds.filter((b) => b.min !== null).sort((a, b) => b.min! - a.min! || Number(b.exclusiveMin) - Number(a.exclusiveMin))[0];
  const hi = bounds.filter((b) => b.max !== null).sort((a, b) => a.max! - b.max! || Number(b.exclusiveMax) - Number(a.exclusiveMax))[0];
  if (lo) set(lo.exclusiveMin ? 'exclusiveMinimum' : 'minimum', lo.min);
  if (hi) set(hi.exclusiveMax ? 'exclusiveMaximum' : 'maximum', hi.max);
  for (const k of ['pattern', 'format', 'multipleOf']) {
    const vs = [...new Set(parts.map(([p]) => p[k]).filter((v) => v !== undefined))];
    if (vs.length > 1) throw new SchemaError(`unsupported at ${parts[0][1]}: allOf with more than one '${k}'`);
    set(k, vs[0]);
  }
  if (parts.some(([p]) => p.uniqueItems === true)) out.uniqueItems = true;
  // Objects: keys every part allows; a key in several parts must match all their schemas.
  const closed = parts
    .filter(([p]) => p.additionalProperties === false)
    .map(([p]) => Object.keys(isSchema(p.properties) ? p.properties : {}));
  const allowed = (k: string) => closed.every((keys) => keys.includes(k));
  const props = new Map<string, unknown[]>();
  for (const [p] of parts) {
    if (!isSchema(p.properties)) continue;
    for (const [k, v] of Object.entries(p.properties)) if (allowed(k)) props.set(k, [...(props.get(k) ?? []), v]);
  }
  if (parts.some(([p]) => isSchema(p.properties))) {
    set('properties', Object.fromEntries([...props].map(([k, vs]) => [k, vs.length === 1 ? vs[0] : { allOf: vs }])));
  }
  const required = [...new Set(parts.flatMap(([p]) => (Array.isArray(p.required) ? p.required : [])))];
  if (required.length > 0) set('required', required);
  const extra = parts.map(([p]) => p.additionalProperties).filter((v) => v !== undefined && v !== true);
  if (extra.includes(false)) set('additionalProperties', false);
  else if (extra.length > 0) set('additionalProperties', extra.length === 1 ? extra[0] : { allOf: extra });
  mergeItems(parts, out);
  // anyOf / oneOf in several parts: every combination of their alternatives.
  const choices = parts
    .map(([p]) => [...(Array.isArray(p.anyOf) ? p.anyOf : []), ...(Array.isArray(p.oneOf) ? p.oneOf : [])])
    .filter((c) => c.length > 0);
  if (choices.length === 1) set('anyOf', choices[0]);
  else if (choices.length > 1) {
    let combos: unknown[][] = [[]];
    for (const c of choices) combos = combos.flatMap((combo) => c.map((alt) => [...combo, alt]));
    if (combos.length > 64) throw new SchemaError(`unsupported at ${parts[0][1]}: allOf of anyOf lists with over 64 combinations`);
    set(
      'anyOf',
      combos.map((combo) => ({ allOf: combo })),
    );
  }
  return out;
}

/** Each part's item schemas as (prefixItems, items), draft-07 tuples (`items: [...]`, additionalItems) included. */
function itemSchemas(p: Schema): [unknown[], unknown] {
  if (Array.isArray(p.items)) return [p.items, p.additionalItems];
  return [Array.isArray(p.prefixItems) ? p.prefixItems : [], p.items];
}

/** allOf of arrays: item i must match every part's schema for position i (its prefix item, else its items). */
function mergeItems(parts: [Schema, string][], out: Schema): void {
  const each = parts.map(([p]) => itemSchemas(p));
  const all = (schemas: unknown[]): unknown => {
    const list = schemas.filter((x) => x !== undefined && x !== true);
    if (list.includes(false)) return false;
    return list.length === 0 ? undefined : list.length === 1 ? list[0] : { allOf: list };
  };
  const prefixLength = Math.max(...each.map(([prefix]) => prefix.length));
  if (prefixLength > 0)
    out.prefixItems = Array.from(
      { length: prefixLength },
      (_, i) => all(each.map(([prefix, items]) => (i < prefix.length ? prefix[i] : items))) ?? true,
    );
  const items = all(each.map(([, items]) => items));
  if (items !== undefined) out.items = items;
}
