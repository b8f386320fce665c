// What a row of the flag table is: its group, value type, default, help and built status, and
// how those read in help and README. The rows themselves are in the group files beside this one.
import type { ValueType } from './values.js';

/** Help and README sections, in the order of the spec's CLI tables. */
export const GROUPS = [
  'Model selection and I/O',
  'KV cache precision',
  'Speculative decoding',
  'Scheduling and caching',
  'Multi-GPU (expert parallelism)',
  'Reasoning and tools',
  'Experimental and operations',
  'Limits',
] as const;
export type Group = (typeof GROUPS)[number];

/** Whether a flag's capability exists. `false` means only the default value is accepted at
 *  start-up; a `when` predicate marks flags where some values are built (e.g. two KV dtypes).
 *  Later work flips these one by one. */
export type Built<T> = boolean | { when(value: T): boolean; readonly note: string };

export interface FlagSpec<K extends string = string, T = unknown> {
  /** Long name without the leading `--`; for the positional, its placeholder (MODEL). */
  readonly name: string;
  readonly positional?: true;
  /** The Config field this flag sets. Two flags may share one (--auto-swap / --no-auto-swap). */
  readonly key: K;
  readonly group: Group;
  /** Other long names (without `--`) meaning exactly this flag. */
  readonly aliases?: readonly string[];
  readonly value: ValueType<T>;
  readonly default: T;
  /** Default as people read it, when it is not simply the value (computed, "off", "none"). */
  readonly defaultText?: string;
  readonly help: string;
  readonly built: Built<T>;
  /** Applied after every other flag, so it wins whatever the order (spec: --no-auto-swap). */
  readonly wins?: true;
}

/** Identity helper: lets TypeScript infer each row's key and value type for Config. */
export function flag<const K extends string, const T>(spec: FlagSpec<K, T>): FlagSpec<K, T> {
  return spec;
}

/** `--name` as typed on the command line (the positional keeps its bare placeholder). */
export function flagLabel(row: FlagSpec<string, unknown>): string {
  return row.positional ? row.name : `--${row.name}`;
}

/** How a row's default reads in help and README. */
export function defaultLabel(row: FlagSpec<string, unknown>): string {
  if (row.defaultText !== undefined) return row.defaultText;
  if (row.default === undefined) return 'none';
  if (!row.value.takesValue) return row.default === row.value.whenPresent ? 'on' : 'off';
  return row.value.format(row.default);
}

/** Built status as people read it. */
export function builtLabel(row: FlagSpec<string, unknown>): string {
  if (row.built === true) return 'built';
  if (row.built === false) return 'not implemented yet';
  return row.built.note;
}
