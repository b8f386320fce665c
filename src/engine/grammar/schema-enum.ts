// Enum and const values checked against the keywords beside them (`{enum, maxLength}`, or an allOf
// merge of an enum with bounds): only the values the whole schema accepts are offered. Scalars are
// checked fully (type, lengths, pattern, format, numeric bounds); objects and arrays by their type,
// required keys and item counts.

import { numberBounds, type Schema, type TypeName } from './schema-keywords.js';
import { formatPattern } from './string-formats.js';

/** The values of `values` that `s`'s other keywords accept (`types`: the admitted types, null: any). */
export function enumValues(values: unknown[], s: Schema, types: ReadonlySet<TypeName> | null, path: string): unknown[] {
  const allows = (t: TypeName) => types === null || types.has(t) || (t === 'integer' && types.has('number'));
  return values.filter((v) => allows(jsonType(v)) && fits(v, s, path));
}

export function jsonType(v: unknown): TypeName {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v as TypeName;
}

function fits(v: unknown, s: Schema, path: string): boolean {
  if (typeof v === 'string') {
    const n = [...v].length;
    if (typeof s.minLength === 'number' && n < s.minLength) return false;
    if (typeof s.maxLength === 'number' && n > s.maxLength) return false;
    if (typeof s.pattern === 'string' && !matches(s.pattern, v, '')) return false;
    const format = typeof s.format === 'string' ? formatPattern(s.format) : undefined;
    if (format && !(matches(`^(?:${format.pattern})$`, v, format.ignoreCase ? 'i' : '') && n <= (format.maxLength ?? Infinity)))
      return false;
    return true;
  }
  if (typeof v === 'number') {
    const b = numberBounds(s, false, path);
    if (b.integer && !Number.isInteger(v)) return false;
    if (b.min !== null && (b.exclusiveMin ? v <= b.min : v < b.min)) return false;
    return b.max === null || (b.exclusiveMax ? v < b.max : v <= b.max);
  }
  if (Array.isArray(v)) {
    return !(typeof s.minItems === 'number' && v.length < s.minItems) && !(typeof s.maxItems === 'number' && v.length > s.maxItems);
  }
  if (v !== null && typeof v === 'object') {
    return !Array.isArray(s.required) || s.required.every((k) => typeof k === 'string' && Object.hasOwn(v, k));
  }
  return true;
}

/** JavaScript's own reading of the pattern (with the `u` flag where it parses so, as Ajv). */
function matches(pattern: string, text: string, flags: string): boolean {
  try {
    return new RegExp(pattern, `${flags}u`).test(text);
  } catch {
    return new RegExp(pattern, flags).test(text);
  }
}
