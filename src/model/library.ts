// The Library: the models an operator can load into a running server — those in the hub cache,
// the paths added by hand, and the demo model carried in the repository — each with its
// architecture, size, whether this build runs it, and its MODEL.toml recipes (`default` always).
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hubCacheRoot, resolveModel } from './hub-cache.js';
import { findModelToml } from './model-toml.js';
import { inspectModel, isModelPath } from './model-inspect.js';

/** dist/src/model/ → repository root → models/demo/: the ~1 MB stories260K GGUF (MIT). */
export const DEMO_MODEL_PATH = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'models', 'demo', 'stories260K.gguf');
export const DEMO_MODEL_ID = 'demo/stories260K';

export type RecipeFlags = Record<string, string | number | boolean>;

export interface LibraryEntry {
  id: string;
  path: string;
  source: 'hub' | 'path' | 'demo';
  architecture: string | null;
  sizeBytes: number;
  runnable: boolean;
  reason: string | null;
  /** The context length the model was trained for; null when its files do not say. */
  contextLength: number | null;
  recipes: { name: string; flags: RecipeFlags }[];
}

/** Paths an operator may add (POST /admin/library); each one is inspected on every listing. */
export const MAX_ADDED_MODELS = 256;

/** add() of a new path once MAX_ADDED_MODELS are there. */
export class LibraryFullError extends Error {}

export class Library {
  private readonly added = new Map<string, string>();

  constructor(private readonly cacheDir?: string) {}

  /** Every model, demo last; read from disk each time (the cache may change under a running server). */
  list(): LibraryEntry[] {
    return this.locations().map(([id, path, source]) => entry(id, path, source));
  }

  /** The model `id`, inspected alone (not the whole Library). */
  find(id: string): LibraryEntry | undefined {
    const where = this.locations().find(([known]) => known === id);
    return where && entry(...where);
  }

  /** The entry whose id or path is `path`, adding it if new; throws when it is not a model. */
  add(path: string): LibraryEntry {
    const full = resolve(path);
    if (!isModelPath(full)) throw new Error(`${path}: not a model (a .gguf file, or a directory with config.json or a .gguf)`);
    const known = this.locations().find(([, where]) => where === full);
    if (known) return entry(...known);
    if (this.added.size >= MAX_ADDED_MODELS) throw new LibraryFullError(`the Library already holds ${MAX_ADDED_MODELS} added paths`);
    this.added.set(full, full);
    return entry(full, full, 'path');
  }

  /** Every model's id, path and source, nothing read from it yet. */
  private locations(): [string, string, LibraryEntry['source']][] {
    return [
      ...this.hubIds().map((id): [string, string, LibraryEntry['source']] => [id, resolveModel(id, this.cacheDir), 'hub']),
      ...[...this.added].map(([id, path]): [string, string, LibraryEntry['source']] => [id, path, 'path']),
      [DEMO_MODEL_ID, DEMO_MODEL_PATH, 'demo'],
    ];
  }

  /** org/name ids of the hub cache's model repositories that have a snapshot. */
  private hubIds(): string[] {
    const root = hubCacheRoot(this.cacheDir);
    if (!existsSync(root)) return [];
    return readdirSync(root)
      .filter((d) => d.startsWith('models--') && d.split('--').length === 3)
      .map((d) => d.slice('models--'.length).replace('--', '/'))
      .filter((id) => {
        try {
          return isModelPath(resolveModel(id, this.cacheDir));
        } catch {
          return false;
        }
      })
      .sort();
  }
}

function entry(id: string, path: string, source: LibraryEntry['source']): LibraryEntry {
  const info = inspectModel(path);
  let recipes: Record<string, RecipeFlags> = {};
  try {
    recipes = findModelToml(path, info.architecture ?? '', `${id} ${basename(path)}`)?.recipes ?? {};
  } catch {
    // A broken MODEL.toml is reported when the model loads; the Library still lists the model.
  }
  const list = Object.entries(recipes).map(([name, flags]) => ({ name, flags }));
  if (!list.some((r) => r.name === 'default')) list.unshift({ name: 'default', flags: {} });
  return { id, path, source, ...info, recipes: list };
}
