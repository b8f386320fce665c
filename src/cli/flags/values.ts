// The value types of flags: how one raw command-line value is parsed, checked and written back,
// and the worded "expected ..." that errors, help and README share.

/** Outcome of parsing one raw value. `warning` means "accepted, but not as written" (spec: only
 *  --kv-high-precision-layers does this); `ok: false` is a usage error (exit 2). */
export type Parsed<T> = { readonly ok: true; readonly value: T; readonly warning?: true } | { readonly ok: false };

/** A flag that takes no value; its presence sets `whenPresent`. */
export interface SwitchValue<T> {
  readonly takesValue: false;
  readonly whenPresent: T;
}

/** A flag (or the positional) that takes one value. */
export interface ArgValue<T> {
  readonly takesValue: true;
  /** Shown in help after the flag: `--port <n>`. */
  readonly placeholder: string;
  /** What is accepted, worded to follow "expected": errors, help and README all use it. */
  readonly expected: string;
  /** Whether help and README spell out `expected` (free text says nothing worth reading). */
  readonly documented: boolean;
  parse(raw: string): Parsed<T>;
  /** How a parsed value is written back (warnings, "not implemented yet" messages). */
  format(value: T): string;
  /** The flag may be given several times: each occurrence's value (an array) is appended to the
   *  earlier ones instead of replacing them (--auth-token). */
  readonly repeatable?: true;
}

export type ValueType<T> = SwitchValue<T> | ArgValue<T>;

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function ok<T>(value: T): Parsed<T> {
  return { ok: true, value };
}
const bad = { ok: false } as const;

export function switchFlag(whenPresent: boolean): SwitchValue<boolean> {
  return { takesValue: false, whenPresent };
}

/** A whole number within [min, max] (max defaults to the largest exact integer). */
export function integer(min: number, max?: number, placeholder = 'n'): ArgValue<number> {
  const expected = max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
  return {
    takesValue: true,
    placeholder,
    expected,
    documented: true,
    parse(raw) {
      if (!INTEGER.test(raw)) return bad;
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) return bad;
      return ok(n);
    },
    format: String,
  };
}

/** A decimal number; `min` may be exclusive (fractions like --gpu-memory-utilization are > 0). */
export function decimal(range: { min: number; minExclusive?: boolean; max?: number }, placeholder = 'x'): ArgValue<number> {
  const { min, minExclusive = false, max } = range;
  const low = minExclusive ? `greater than ${min}` : `of at least ${min}`;
  const expected =
    max === undefined
      ? `a number ${low}`
      : minExclusive
        ? `a number greater than ${min} and at most ${max}`
        : `a number from ${min} to ${max}`;
  return {
    takesValue: true,
    placeholder,
    expected,
    documented: true,
    parse(raw) {
      if (!DECIMAL.test(raw)) return bad;
      const n = Number(raw);
      if (!Number.isFinite(n)) return bad;
      if (minExclusive ? n <= min : n < min) return bad;
      if (max !== undefined && n > max) return bad;
      return ok(n);
    },
    format: String,
  };
}

/** One of a fixed set of words. */
export function choice<const V extends string>(values: readonly V[], placeholder: string): ArgValue<V> {
  return {
    takesValue: true,
    placeholder,
    expected: `one of ${values.join(', ')}`,
    documented: true,
    parse(raw) {
      return (values as readonly string[]).includes(raw) ? ok(raw as V) : bad;
    },
    format: String,
  };
}

/** Free text (a name, a path, an address); only the empty string is refused. */
export function text(placeholder: string, what: string): ArgValue<string> {
  return {
    takesValue: true,
    placeholder,
    expected: `a non-empty ${what}`,
    documented: false,
    parse(raw) {
      return raw === '' ? bad : ok(raw);
    },
    format: String,
  };
}

/** API keys (--auth-token): repeatable, so the values accumulate in order. A key is a secret, so
 *  `format` never writes one back. */
export function apiKeys(placeholder: string): ArgValue<readonly string[]> {
  return {
    takesValue: true,
    placeholder,
    expected: 'a non-empty API key',
    documented: false,
    repeatable: true,
    parse(raw) {
      return raw === '' ? bad : ok([raw]);
    },
    format: (value) => `(${value.length} ${value.length === 1 ? 'key' : 'keys'})`,
  };
}

/** A repeatable comma-separated list (--allowed-hosts, --allowed-origins): each occurrence's
 *  entries are appended; every entry must pass `valid`. */
export function nameList(placeholder: string, expected: string, valid: (entry: string) => boolean): ArgValue<readonly string[]> {
  return {
    takesValue: true,
    placeholder,
    expected,
    documented: true,
    repeatable: true,
    parse(raw) {
      const entries = raw.split(',').map((e) => e.trim());
      return entries.length > 0 && entries.every((e) => e !== '' && valid(e)) ? ok(entries) : bad;
    },
    format: (value) => value.join(','),
  };
}

/** --kv-high-precision-layers: a count, `auto` (= 2) or `max`/`all` (every attention layer).
 *  Per the spec anything else is not an error: it warns and becomes 0. */
export const highPrecisionLayers: ArgValue<number | 'all'> = {
  takesValue: true,
  placeholder: 'n|auto|max|all',
  expected: 'an integer of at least 0, auto (= 2), max or all',
  documented: true,
  parse(raw) {
    if (raw === 'auto') return ok(2);
    if (raw === 'max' || raw === 'all') return ok('all');
    const n = Number(raw);
    if (/^\d+$/.test(raw) && Number.isSafeInteger(n)) return ok(n);
    return { ok: true, value: 0, warning: true };
  },
  format: String,
};

/** A TCP port. */
export const PORT = integer(1, 65535, 'port');
