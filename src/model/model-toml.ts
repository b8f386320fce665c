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
    toolCallParser: string | null;
    /** Whether the model emits <think> reasoning. */
    reasoning: boolean;
    maxThinkingBudget: number | null;
    defaultNumDrafts: number;
    vision: boolean;
  };
  /** Default sampling values (temperature, top_p, top_k, min_p, …) keyed as in requests. */
  sampling: Record<string, number>;
  /** Named flag sets: recipe name → flag name (without --) → value. */
  recipes: Record<string, Record<string, string | number | boolean>>;
  /** Registry entries only: which models it applies to. */
  match: { architectures: string[]; namePatterns: string[] };
}

// dist/src/model/ → repository root → registry/
const REGISTRY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'registry');

function asRecord(v: unknown, where: string): Record<string, unknown> {
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where} must be a table`);
  return v as Record<string, unknown>;
}

function field<T>(t: Record<string, unknown>, key: string, type: 'string' | 'number' | 'boolean', fallback: T, where: string): T {
  const v = t[key];
  if (v === undefined) return fallback;
  if (typeof v !== type) throw new Error(`${where}: ${key} must be a ${type}`);
  return v as T;
}

/** Parse and validate MODEL.toml text. Errors name the file and the key. */
export function parseModelToml(text: string, source: string): ModelToml {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${source}: invalid TOML: ${(e as Error).message}`, { cause: e });
  }
  const m = asRecord(doc.model, `${source}: [model]`);
  const where = `${source}: [model]`;
  const sampling: Record<string, number> = {};
  for (const [k, v] of Object.entries(asRecord(doc.sampling, `${source}: [sampling]`))) {
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
  const strings = (v: unknown, key: string): string[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${source}: [match] ${key} must be a list of strings`);
    return v as string[];
  };
  const budget = m.max_thinking_budget;
  if (budget !== undefined && (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 0)) {
    throw new Error(`${where}: max_thinking_budget must be a non-negative integer`);
  }
  return {
    source,
    model: {
      family: field(m, 'family', 'string', 'unknown', where),
      toolCallParser: field<string | null>(m, 'tool_call_parser', 'string', null, where),
      reasoning: field(m, 'reasoning', 'boolean', false, where),
      maxThinkingBudget: (budget as number | undefined) ?? null,
      defaultNumDrafts: field(m, 'default_num_drafts', 'number', 1, where),
      vision: field(m, 'vision', 'boolean', false, where),
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
