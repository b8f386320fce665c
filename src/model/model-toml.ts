// MODEL.toml: per-model defaults (tool-call parser, reasoning, thinking budget, drafts, vision),
// sampling defaults and named recipes (flag sets for the Library). Looked up beside the
// checkpoint first, then in the built-in registry (registry/*.toml) by architecture/model name.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';

export interface ModelToml {
  /** Where it was read from (a path), for logs. */
  source: string;
  model: {
    family: string;
    /** Checked against the tool-call formats when the model loads (src/server/runtime.ts): this layer does not know them. */
    toolCallParser: string | null;
    /** Whether the model emits reasoning. */
    reasoning: boolean;
    /** The tags it writes its reasoning in (src/chat/reasoning.ts has each format's tags). */
    reasoningFormat: ReasoningFormatName;
    maxThinkingBudget: number | null;
    defaultNumDrafts: number;
    vision: boolean;
  };
  /** Default sampling values (SAMPLING_KEYS), keyed as in requests. */
  sampling: Record<string, number>;
  /** Named flag sets: recipe name → flag name (without --) → value. */
  recipes: Record<string, Record<string, string | number | boolean>>;
  /** Registry entries only: which models it applies to. */
  match: { architectures: string[]; namePatterns: string[] };
}

// dist/src/model/ → repository root → registry/
const REGISTRY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'registry');

/** The tables a MODEL.toml may have, and the keys of each fixed one. */
const TABLES = ['match', 'model', 'sampling', 'recipes'] as const;
const MATCH_KEYS = ['architectures', 'name_patterns'] as const;
/** Request fields a [sampling] table may default (keyed as in requests). */
export const SAMPLING_KEYS = ['temperature', 'top_p', 'top_k', 'min_p'] as const;

/**
 * `reasoning_format` values: `<think>`…`</think>`, Mistral's `[THINK]`…`[/THINK]`, Gemma 4's
 * `<|channel>thought`…`<channel|>`, OpenAI harmony's channels (GPT-OSS). The names live here so that a typo is an error when the file is
 * read; src/chat/reasoning.ts maps each to its tags (a Record over this list, so none is missed).
 */
export const REASONING_FORMAT_NAMES = ['think', 'mistral', 'gemma4', 'harmony'] as const;
export type ReasoningFormatName = (typeof REASONING_FORMAT_NAMES)[number];

type ValueKind = 'string' | 'boolean' | 'number' | 'non-negative integer' | 'positive integer' | readonly string[];
const MODEL_KEYS: Record<string, ValueKind> = {
  family: 'string',
  tool_call_parser: 'string',
  reasoning: 'boolean',
  reasoning_format: REASONING_FORMAT_NAMES,
  max_thinking_budget: 'non-negative integer',
  default_num_drafts: 'positive integer',
  vision: 'boolean',
};

function asRecord(v: unknown, where: string): Record<string, unknown> {
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where} must be a table`);
  return v as Record<string, unknown>;
}

/** A key the file format does not have is a typo: an error naming it, not a value silently ignored. */
function onlyKeys(t: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const k of Object.keys(t)) if (!known.includes(k)) throw new Error(`${where}: unknown key ${k} (known: ${known.join(', ')})`);
}

function isKind(v: unknown, kind: ValueKind): boolean {
  if (typeof kind !== 'string') return typeof v === 'string' && kind.includes(v);
  switch (kind) {
    case 'non-negative integer':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0;
    case 'positive integer':
      return typeof v === 'number' && Number.isInteger(v) && v >= 1;
    default:
      return typeof v === kind;
  }
}

function field<T>(t: Record<string, unknown>, key: string, fallback: T, where: string): T {
  const v = t[key];
  if (v === undefined) return fallback;
  const kind = MODEL_KEYS[key]!;
  if (!isKind(v, kind)) throw new Error(`${where}: ${key} must be ${typeof kind === 'string' ? `a ${kind}` : `one of ${kind.join(', ')}`}`);
  return v as T;
}

/** Parse and validate MODEL.toml text: every key known, every value of its type. Errors name the file and the key. */
export function parseModelToml(text: string, source: string): ModelToml {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${source}: invalid TOML: ${(e as Error).message}`, { cause: e });
  }
  for (const k of Object.keys(doc)) {
    if (!(TABLES as readonly string[]).includes(k))
      throw new Error(`${source}: unknown table [${k}] (known: ${TABLES.map((t) => `[${t}]`).join(', ')})`);
  }
  const where = `${source}: [model]`;
  const m = asRecord(doc.model, where);
  onlyKeys(m, Object.keys(MODEL_KEYS), where);
  const sampling: Record<string, number> = {};
  const samplingTable = asRecord(doc.sampling, `${source}: [sampling]`);
  onlyKeys(samplingTable, SAMPLING_KEYS, `${source}: [sampling]`);
  for (const [k, v] of Object.entries(samplingTable)) {
    if (typeof v !== 'number') throw new Error(`${source}: [sampling] ${k} must be a number`);
    sampling[k] = v;
  }
  const recipes: ModelToml['recipes'] = {};
  for (const [name, r] of Object.entries(asRecord(doc.recipes, `${source}: [recipes]`))) {
    const flags: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(asRecord(r, `${source}: [recipes.${name}]`))) {
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
        throw new Error(`${source}: [recipes.${name}] ${k} must be a string, number or boolean`);
      }
      flags[k] = v;
    }
    recipes[name] = flags;
  }
  const match = asRecord(doc.match, `${source}: [match]`);
  onlyKeys(match, MATCH_KEYS, `${source}: [match]`);
  const strings = (v: unknown, key: string): string[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${source}: [match] ${key} must be a list of strings`);
    return v as string[];
  };
  return {
    source,
    model: {
      family: field(m, 'family', 'unknown', where),
      toolCallParser: field<string | null>(m, 'tool_call_parser', null, where),
      reasoning: field(m, 'reasoning', false, where),
      reasoningFormat: field<ReasoningFormatName>(m, 'reasoning_format', 'think', where),
      maxThinkingBudget: field<number | null>(m, 'max_thinking_budget', null, where),
      defaultNumDrafts: field(m, 'default_num_drafts', 1, where),
      vision: field(m, 'vision', false, where),
    },
    sampling,
    recipes,
    match: { architectures: strings(match.architectures, 'architectures'), namePatterns: strings(match.name_patterns, 'name_patterns') },
  };
}

export function loadRegistry(dir = REGISTRY_DIR): ModelToml[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.toml'))
    .sort()
    .map((f) => parseModelToml(readFileSync(join(dir, f), 'utf8'), join(dir, f)));
}

export interface FindModelTomlOptions {
  /**
   * The checkpoint's own name (config.json `_name_or_path`, GGUF `general.name`): its name patterns
   * are tried when the served name and the path match none, before the architecture.
   */
  checkpointName?: string | null;
  registry?: ModelToml[];
}

/**
 * MODEL.toml for a checkpoint: the file beside it (in the model directory, or beside a .gguf
 * file), else the registry entry with the longest name pattern found in the model name (so
 * "qwen3-coder" beats "qwen3"), then in the checkpoint's own name, else the first whose
 * architecture matches. Name patterns are case-insensitive substrings.
 */
export function findModelToml(source: string, architecture: string, modelName: string, opts: FindModelTomlOptions = {}): ModelToml | null {
  const dir = source.endsWith('.gguf') ? dirname(source) : source;
  const beside = join(dir, 'MODEL.toml');
  if (existsSync(beside)) return parseModelToml(readFileSync(beside, 'utf8'), beside);
  const registry = opts.registry ?? loadRegistry();
  const byName = (name: string): ModelToml | null => {
    const lower = name.toLowerCase();
    let best: ModelToml | null = null;
    let bestLen = 0;
    for (const e of registry) {
      for (const p of e.match.namePatterns) {
        if (p.length > bestLen && lower.includes(p.toLowerCase())) {
          best = e;
          bestLen = p.length;
        }
      }
    }
    return best;
  };
  return (
    byName(`${modelName} ${basename(source)}`) ??
    (opts.checkpointName ? byName(opts.checkpointName) : null) ??
    registry.find((e) => e.match.architectures.includes(architecture)) ??
    null
  );
}
