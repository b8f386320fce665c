// A strict parser of the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), for tests: it throws on the
// first thing a conforming scraper could reject or misread, and checks what the format leaves to
// the writer's discipline:
//
// - lines end with \n, the last one too; `# HELP name text` and `# TYPE name type` at most once
//   per family, TYPE before the family's first sample, HELP text escaping only \\ and \n; other
//   `#` lines are comments;
// - sample lines `name{label="value",...} value [timestamp]`: metric names
//   [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* not starting with `__`, no
//   label twice, label values in double quotes escaping only \\, \" and \n, values what Go's
//   strconv.ParseFloat reads (so NaN, Nan, +Inf, -Inf), timestamps integers; one space between fields (what every writer
//   emits; the format allows more, which this parser refuses on purpose);
// - a family's samples are contiguous (one group), no series (name + label set) twice;
// - counters: samples named as the family, never negative or NaN; gauges: named as the family;
//   histograms: only `_bucket` (with `le`), `_sum`, `_count` samples; per label set, buckets in
//   increasing `le` order with non-decreasing cumulative counts, an `le="+Inf"` bucket equal to
//   `_count`, and a `_sum`; summaries: `quantile` samples, `_sum`, `_count`.

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface Family {
  name: string;
  help: string | null;
  type: MetricType;
  samples: Sample[];
}

export class PromParseError extends Error {}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
// Go's strconv.ParseFloat (what Prometheus reads values with): decimal floats, and Inf, Infinity
// (signed or not) and NaN in any case — prom-client writes NaN as `Nan`.
const FLOAT = /^(?:[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|inf(?:inity)?)|nan)$/i;

function parseFloatStrict(text: string, where: string): number {
  if (!FLOAT.test(text)) throw new PromParseError(`${where}: not a float: ${JSON.stringify(text)}`);
  if (/^nan$/i.test(text)) return NaN;
  if (/inf/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  return Number(text);
}

function unescapeHelp(text: string, where: string): string {
  return text.replace(/\\(.?)/g, (_m, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    throw new PromParseError(`${where}: bad escape \\${c} in HELP`);
  });
}

/** The family a sample name belongs to: the name itself, or for histograms/summaries its base. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(name);
  if (own) return own;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!m) return undefined;
  const base = families.get(m[1]!);
  if (!base) return undefined;
  if (base.type === 'histogram' || (base.type === 'summary' && m[2] !== 'bucket')) return base;
  return undefined;
}

/** Reads `{...}` starting at `line[i] === '{'`; returns the labels and the index after `}`. */
function readLabels(line: string, i: number, where: string): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  i++; // '{'
  for (;;) {
    if (line[i] === '}') return [labels, i + 1];
    const nameMatch = /^[^=]*/.exec(line.slice(i))![0];
    if (!LABEL_NAME.test(nameMatch)) throw new PromParseError(`${where}: bad label name ${JSON.stringify(nameMatch)}`);
    if (nameMatch.startsWith('__')) throw new PromParseError(`${where}: reserved label name ${nameMatch}`);
    if (nameMatch in labels) throw new PromParseError(`${where}: label ${nameMatch} twice`);
    i += nameMatch.length;
    if (line[i] !== '=' || line[i + 1] !== '"') throw new PromParseError(`${where}: expected ="… after label ${nameMatch}`);
    i += 2;
    let value = '';
    for (;;) {
      const c = line[i];
      if (c === undefined) throw new PromParseError(`${where}: unterminated label value`);
      if (c === '"') break;
      if (c === '\\') {
        const e = line[i + 1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else throw new PromParseError(`${where}: bad escape \\${e ?? ''} in label value`);
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    labels[nameMatch] = value;
    i++; // closing quote
    if (line[i] === ',') {
      i++;
      continue; // a trailing comma before } is allowed
    }
    if (line[i] !== '}') throw new PromParseError(`${where}: expected , or } after label ${nameMatch}`);
  }
}

const seriesKey = (name: string, labels: Record<string, string>): string =>
  `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',')}}`;

/** Parses and checks an exposition; throws PromParseError naming the line on the first problem. */
export function parsePromText(text: string): Map<string, Family> {
  if (text.length > 0 && !text.endsWith('\n')) throw new PromParseError('the last line does not end with \\n');
  const families = new Map<string, Family>();
  const seenHelp = new Set<string>();
  const seenType = new Set<string>();
  const series = new Set<string>();
  const closed = new Set<string>(); // families whose sample group has ended
  let current: string | null = null; // family of the last sample line
  const lines = text.split('\n');
  lines.pop(); // after the final \n
  lines.forEach((line, n) => {
    const where = `line ${n + 1}`;
    if (line.includes('\r')) throw new PromParseError(`${where}: carriage return`);
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      if (!/^# (HELP|TYPE) /.test(line)) return; // a comment
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) throw new PromParseError(`${where}: malformed ${line.slice(2, 6)} line`);
      const [, kind, name, rest] = m as unknown as [string, 'HELP' | 'TYPE', string, string | undefined];
      if (!METRIC_NAME.test(name)) throw new PromParseError(`${where}: bad metric name in ${kind}: ${name}`);
      if (current !== null && current !== name) closed.add(current);
      if (closed.has(name)) throw new PromParseError(`${where}: ${kind} for ${name} after its samples ended`);
      let fam = families.get(name);
      if (kind === 'HELP') {
        if (seenHelp.has(name)) throw new PromParseError(`${where}: second HELP for ${name}`);
        seenHelp.add(name);
        const help = unescapeHelp(rest ?? '', where);
        if (fam) fam.help = help;
        else families.set(name, { name, help, type: 'untyped', samples: [] });
      } else {
        if (rest === undefined || !TYPES.has(rest as MetricType)) throw new PromParseError(`${where}: bad TYPE ${rest}`);
        if (seenType.has(name) || (fam && fam.samples.length > 0))
          throw new PromParseError(`${where}: TYPE for ${name} twice or after its samples`);
        seenType.add(name);
        if (!fam) families.set(name, (fam = { name, help: null, type: 'untyped', samples: [] }));
        fam.type = rest as MetricType;
      }
      current = name;
      return;
    }
    // A sample line.
    const nameText = /^[^{ ]*/.exec(line)![0];
    if (!METRIC_NAME.test(nameText)) throw new PromParseError(`${where}: bad metric name ${JSON.stringify(nameText)}`);
    let i = nameText.length;
    let labels: Record<string, string> = {};
    if (line[i] === '{') [labels, i] = readLabels(line, i, where);
    if (line[i] !== ' ') throw new PromParseError(`${where}: expected one space before the value`);
    const fields = line.slice(i + 1).split(' ');
    if (fields.length < 1 || fields.length > 2 || fields.some((f) => f === '')) {
      throw new PromParseError(`${where}: expected "value [timestamp]" with single spaces, got ${JSON.stringify(line.slice(i))}`);
    }
    const value = parseFloatStrict(fields[0]!, where);
    let timestamp: number | undefined;
    if (fields[1] !== undefined) {
      if (!/^-?\d+$/.test(fields[1])) throw new PromParseError(`${where}: bad timestamp ${fields[1]}`);
      timestamp = Number(fields[1]);
    }
    let fam = familyOf(nameText, families);
    if (!fam) families.set(nameText, (fam = { name: nameText, help: null, type: 'untyped', samples: [] }));
    if (current !== null && current !== fam.name) closed.add(current);
    if (closed.has(fam.name)) throw new PromParseError(`${where}: samples of ${fam.name} are not one group`);
    current = fam.name;
    const key = seriesKey(nameText, labels);
    if (series.has(key)) throw new PromParseError(`${where}: series ${key} twice`);
    series.add(key);
    const suffix = nameText.slice(fam.name.length);
    switch (fam.type) {
      case 'counter':
        if (suffix !== '') throw new PromParseError(`${where}: counter ${fam.name} has a sample named ${nameText}`);
        if (!(value >= 0)) throw new PromParseError(`${where}: counter ${nameText} is ${value}`);
        break;
      case 'gauge':
      case 'untyped':
        if (suffix !== '') throw new PromParseError(`${where}: ${fam.type} ${fam.name} has a sample named ${nameText}`);
        break;
      case 'histogram':
        if (suffix === '_bucket') {
          if (!('le' in labels)) throw new PromParseError(`${where}: bucket without le`);
          parseFloatStrict(labels.le!, `${where} (le)`);
        } else if (suffix !== '_sum' && suffix !== '_count') {
          throw new PromParseError(`${where}: histogram ${fam.name} has a sample named ${nameText}`);
        } else if ('le' in labels) throw new PromParseError(`${where}: le on ${nameText}`);
        if ((suffix === '_count' || suffix === '_bucket') && !(value >= 0 && Number.isInteger(value)))
          throw new PromParseError(`${where}: ${nameText} is ${value}, not a count`);
        break;
      case 'summary':
        if (suffix === '') {
          if (!('quantile' in labels)) throw new PromParseError(`${where}: summary sample without quantile`);
        } else if (suffix !== '_sum' && suffix !== '_count') {
          throw new PromParseError(`${where}: summary ${fam.name} has a sample named ${nameText}`);
        }
        break;
    }
    fam.samples.push(timestamp === undefined ? { name: nameText, labels, value } : { name: nameText, labels, value, timestamp });
  });
  for (const fam of families.values()) if (fam.type === 'histogram') checkHistogram(fam);
  return families;
}

/** Per label set (le aside): buckets in increasing le, cumulative, +Inf = _count, a _sum. */
function checkHistogram(fam: Family): void {
  type Group = { buckets: [number, number][]; sum?: number; count?: number };
  const groups = new Map<string, Group>();
  for (const s of fam.samples) {
    const { le, ...rest } = s.labels;
    const key = seriesKey('', rest);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { buckets: [] }));
    if (s.name.endsWith('_bucket')) g.buckets.push([parseFloatStrict(le!, fam.name), s.value]);
    else if (s.name.endsWith('_sum')) g.sum = s.value;
    else g.count = s.value;
  }
  for (const [key, g] of groups) {
    const what = `${fam.name}${key}`;
    if (g.buckets.length === 0) throw new PromParseError(`${what}: no buckets`);
    for (let k = 1; k < g.buckets.length; k++) {
      const [le0, c0] = g.buckets[k - 1]!;
      const [le1, c1] = g.buckets[k]!;
      if (!(le1 > le0)) throw new PromParseError(`${what}: le ${le1} after ${le0}`);
      if (c1 < c0) throw new PromParseError(`${what}: bucket le=${le1} (${c1}) below le=${le0} (${c0})`);
    }
    const [lastLe, lastCount] = g.buckets[g.buckets.length - 1]!;
    if (lastLe !== Infinity) throw new PromParseError(`${what}: no le="+Inf" bucket (last)`);
    if (g.count === undefined || g.sum === undefined) throw new PromParseError(`${what}: missing _count or _sum`);
    if (lastCount !== g.count) throw new PromParseError(`${what}: le="+Inf" is ${lastCount}, _count is ${g.count}`);
    if (Number.isNaN(g.sum)) throw new PromParseError(`${what}: _sum is NaN`);
  }
}

/** The value of the one sample `name` with exactly `labels`; undefined when absent. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const fam = familyOf(name, families);
  const want = seriesKey(name, labels);
  return fam?.samples.find((s) => seriesKey(s.name, s.labels) === want)?.value;
}
