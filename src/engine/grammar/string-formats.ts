// JSON Schema `format`s as patterns, each a subset of what Ajv (ajv-formats, full mode) accepts,
// so every string the grammar allows validates:
//   date       YYYY-MM-DD, real days of the month (leap years included)
//   time       HH:MM:SS[.fraction] then Z or ±HH:MM (no leap seconds; RFC 3339's zone is required)
//   date-time  date, T, time
//   duration   P…Y…M…D T…H…M…S or P…W (ISO 8601, as Ajv's)
//   uuid       8-4-4-4-12 hex digits
//   email      Ajv's pattern (dot-atoms @ dotted host labels)
//   ipv4, ipv6 Ajv's patterns
//   hostname   Ajv's pattern, at most 253 characters
//   uri        Ajv's pattern (a scheme is required)
// Other formats are a SchemaError (they would go unenforced).

import { CountTable } from './cfg-counts.js';
import type { CfgMachine } from './cfg-machine.js';
import { cfgNode, type GNode } from './nodes.js';
import { regexMachine } from './regex.js';

const DAY_31 = '(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])';
const DAY_30 = '(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)';
const DAY_FEB = '02-(?:0[1-9]|1\\d|2[0-8])';
const LEAP_YEAR = '\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00';
const DATE = `\\d{4}-(?:${DAY_31}|${DAY_30}|${DAY_FEB})|(?:${LEAP_YEAR})-02-29`;
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)';
const DIGITS = '\\d{1,9}';
const TIME_PART = `T(?:${DIGITS}H(?:${DIGITS}M)?(?:${DIGITS}S)?|${DIGITS}M(?:${DIGITS}S)?|${DIGITS}S)`;
const DATE_PART = `${DIGITS}Y(?:${DIGITS}M)?(?:${DIGITS}D)?|${DIGITS}M(?:${DIGITS}D)?|${DIGITS}D`;
const HEX = '[0-9a-fA-F]';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = `(?:${OCTET}\\.){3}${OCTET}`;
const H16 = '[0-9a-f]{1,4}';
const IPV6 =
  `(?:(?:${H16}:){7}(?:${H16}|:)|(?:${H16}:){6}(?::${H16}|${IPV4}|:)|(?:${H16}:){5}(?:(?::${H16}){1,2}|:${IPV4}|:)|` +
  `(?:${H16}:){4}(?:(?::${H16}){1,3}|(?::${H16})?:${IPV4}|:)|(?:${H16}:){3}(?:(?::${H16}){1,4}|(?::${H16}){0,2}:${IPV4}|:)|` +
  `(?:${H16}:){2}(?:(?::${H16}){1,5}|(?::${H16}){0,3}:${IPV4}|:)|(?:${H16}:){1}(?:(?::${H16}){1,6}|(?::${H16}){0,4}:${IPV4}|:)|` +
  `:(?:(?::${H16}){1,7}|(?::${H16}){0,5}:${IPV4}|:))`;
const ATOM = "[a-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[a-z0-9](?:[a-z0-9-]*[a-z0-9])?';
const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const URI_CHAR = "(?:[a-z0-9\\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})";
const URI =
  `[a-z][a-z0-9+\\-.]*:(?:\\/?\\/(?:(?:[a-z0-9\\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:${IPV4}|(?:[a-z0-9\\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\\d*)?` +
  `(?:\\/${URI_CHAR}*)*|\\/(?:${URI_CHAR}+(?:\\/${URI_CHAR}*)*)?|${URI_CHAR}+(?:\\/${URI_CHAR}*)*)` +
  `(?:\\?(?:${URI_CHAR}|[/?])*)?(?:#(?:${URI_CHAR}|[/?])*)?`;

interface FormatDef {
  pattern: string;
  ignoreCase?: boolean;
  /** Most characters. */
  maxLength?: number;
}

const FORMATS: Record<string, FormatDef> = {
  date: { pattern: DATE },
  time: { pattern: TIME },
  'date-time': { pattern: `(?:${DATE})[Tt]${TIME}` },
  duration: { pattern: `P(?:(?:${DATE_PART})(?:${TIME_PART})?|${TIME_PART}|${DIGITS}W)` },
  uuid: { pattern: `${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}` },
  email: { pattern: `${ATOM}(?:\\.${ATOM})*@(?:${LABEL}\\.)+${LABEL}`, ignoreCase: true },
  ipv4: { pattern: IPV4 },
  ipv6: { pattern: IPV6, ignoreCase: true },
  hostname: { pattern: `${HOST_LABEL}(?:\\.${HOST_LABEL})*\\.?`, ignoreCase: true, maxLength: 253 },
  uri: { pattern: URI, ignoreCase: true },
};

export const FORMAT_NAMES: readonly string[] = Object.keys(FORMATS);

/** A format's pattern (anchored), or undefined for a format not supported. */
export function formatPattern(name: string): FormatDef | undefined {
  return Object.hasOwn(FORMATS, name) ? FORMATS[name] : undefined;
}

const machines = new Map<string, CfgMachine>();
const nodes = new Map<string, GNode>();

/** The format's machine (JSON-string body text), built once per process. */
export function formatMachine(name: string): CfgMachine {
  let m = machines.get(name);
  if (!m) {
    const def = FORMATS[name];
    machines.set(name, (m = regexMachine(def.pattern, { mode: 'json', anchored: true, ignoreCase: def.ignoreCase })));
  }
  return m;
}

/** A string body in the format (shared: its masks are cached once per vocabulary). */
export function formatBody(name: string): GNode {
  let n = nodes.get(name);
  if (!n) {
    const def = FORMATS[name];
    const m = formatMachine(name);
    const counts = def.maxLength === undefined ? null : new CountTable(m, 0, def.maxLength, `format '${name}'`);
    nodes.set(name, (n = cfgNode(m, counts, true)));
  }
  return n;
}
