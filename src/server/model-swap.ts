// The one swap path (the /admin/ API and request-triggered swaps both use it): refuse before
// releasing anything (unknown model or recipe, an architecture or tensor type this build cannot
// run, a recipe needing more than one rank), else Loading (new requests get 503), drain the
// requests still running on the old model, release it (engine worker: weights and KV pool),
// load the new one, Ready. A failed load reloads the previous model (or leaves NoModelLoaded)
// and keeps the reason for GET /admin/state.
import type { Logger } from 'pino';
import { ApiError } from '../common/api-error.js';
import type { Library, LibraryEntry, RecipeFlags } from '../model/library.js';
import type { LoadProgress } from '../model/types.js';
import type { Lifecycle } from './lifecycle.js';
import { loadModel, unloadModel, type LoadedModel, type LoadRequest } from './model-load.js';

/** A recipe's flags as the server's settings (the CLI parses them: src/cli/serve-options.ts). */
export type RecipeSettings = { error: string } | { engine: LoadRequest['engine']; runtime: LoadRequest['runtime']; warnings: string[] };

/** A swap checked and ready to run. */
export interface SwapPlan {
  readonly id: string;
  readonly recipe: string;
  readonly request: LoadRequest;
  readonly warnings: readonly string[];
}

export interface SwitcherDeps {
  lifecycle: Lifecycle;
  library: Library;
  log: Logger;
  recipeSettings: (flags: RecipeFlags) => RecipeSettings;
  /** The served model changed (the name /v1/models and responses report). */
  onServed?: (modelName: string) => void;
  /** How a model is loaded and released (model-load.ts; a unit test gives its own). */
  load?: typeof loadModel;
  unload?: typeof unloadModel;
}

interface Current {
  plan: SwapPlan;
  loaded: LoadedModel;
}

export class ModelSwitcher {
  private current: Current | null = null;
  private running: Promise<void> | null = null;
  private progress: { id: string; tensors: number; totalTensors: number } | null = null;
  private failure: string | null = null;
  private readonly startedAt = Date.now();

  private readonly load: typeof loadModel;
  private readonly unload: typeof unloadModel;

  constructor(private readonly deps: SwitcherDeps) {
    this.load = deps.load ?? loadModel;
    this.unload = deps.unload ?? unloadModel;
  }

  /** GET /admin/state. */
  state() {
    const c = this.current;
    return {
      state: this.deps.lifecycle.state,
      model: c === null || this.deps.lifecycle.state !== 'ready' ? null : { id: c.plan.id, path: c.loaded.source, recipe: c.plan.recipe },
      uptimeSec: Math.floor((Date.now() - this.startedAt) / 1000),
      loading: this.progress === null ? null : { ...this.progress },
      lastError: this.failure,
    };
  }

  get library(): Library {
    return this.deps.library;
  }

  get currentId(): string | null {
    return this.current?.plan.id ?? null;
  }

  /** The swap under way, if any. */
  get pending(): Promise<void> | null {
    return this.running;
  }

  /** Checks a swap to Library model `id` with `recipe` without touching the running model: 404 or 409 `model_refused`. */
  plan(id: string, recipe = 'default'): SwapPlan {
    const entry = this.deps.library.find(id);
    if (!entry) throw new ApiError(404, `The model '${id}' is not in the Library.`, { code: 'model_not_found', param: 'model' });
    const worldSize = this.deps.lifecycle.worldSize;
    if (worldSize > 1)
      throw new ApiError(
        409,
        `The model '${id}' cannot be loaded: this server runs with --world-size ${worldSize} (expert parallelism); a hot swap is single-node.`,
        { code: 'model_refused' },
      );
    return planFor(entry, recipe, this.deps.recipeSettings);
  }

  /** Start-up: the first model, loaded straight to Ready (errors are the caller's). */
  async loadFirst(plan: SwapPlan, onProgress?: (p: LoadProgress) => void): Promise<void> {
    const loaded = await this.load(plan.request, this.deps.log, onProgress);
    this.ready({ plan, loaded });
  }

  /** Runs a swap in the background; 409 when one is already running. Resolves when it has ended (either way). */
  start(plan: SwapPlan): Promise<void> {
    if (this.running !== null)
      throw new ApiError(409, 'A model swap is already running; retry when it ends.', { code: 'swap_in_progress' });
    this.running = this.swap(plan).finally(() => {
      this.running = null;
      this.progress = null;
    });
    return this.running;
  }

  /** Releases the model at shutdown. */
  async close(): Promise<void> {
    await this.running;
    const c = this.current;
    this.current = null;
    if (c) await this.unload(c.loaded);
  }

  private async swap(plan: SwapPlan): Promise<void> {
    const { lifecycle, log } = this.deps;
    this.failure = null;
    this.progress = { id: plan.id, tensors: 0, totalTensors: 0 };
    for (const warning of plan.warnings) log.warn(warning);
    const previous = this.current;
    lifecycle.setLoading();
    // In-flight requests finish on the model they started on; then it is released.
    await lifecycle.drained();
    if (previous !== null) {
      this.current = null;
      log.info(`Releasing ${previous.plan.id}`);
      await this.unload(previous.loaded).catch((err: Error) => log.warn(`releasing ${previous.plan.id}: ${err.message}`));
    }
    const track = (p: LoadProgress) => (this.progress = { id: plan.id, tensors: p.tensors, totalTensors: p.totalTensors });
    try {
      this.ready({ plan, loaded: await this.load(plan.request, log, track) });
      log.info(`Swapped to ${plan.id} (recipe ${plan.recipe})`);
      return;
    } catch (err) {
      this.failure = `loading ${plan.id} failed: ${(err as Error).message}`;
      log.error(this.failure);
    }
    if (previous === null) {
      lifecycle.setNoModel();
      return;
    }
    try {
      this.progress = { id: previous.plan.id, tensors: 0, totalTensors: 0 };
      this.ready({ plan: previous.plan, loaded: await this.load(previous.plan.request, log, track) });
      log.info(`Restored ${previous.plan.id}`);
    } catch (err) {
      this.failure += `; restoring ${previous.plan.id} failed too: ${(err as Error).message}`;
      log.error(this.failure);
      lifecycle.setNoModel();
    }
  }

  private ready(current: Current): void {
    this.current = current;
    this.deps.lifecycle.setReady(current.loaded.runtime);
    this.deps.onServed?.(current.loaded.modelName);
  }
}

/** The checks made before anything is released. */
function planFor(entry: LibraryEntry, recipeName: string, recipeSettings: SwitcherDeps['recipeSettings']): SwapPlan {
  const recipe = entry.recipes.find((r) => r.name === recipeName);
  if (!recipe)
    throw new ApiError(404, `The model '${entry.id}' has no recipe '${recipeName}'.`, { code: 'recipe_not_found', param: 'recipe' });
  const refuse = (why: string) => new ApiError(409, `The model '${entry.id}' cannot be loaded: ${why}.`, { code: 'model_refused' });
  if (!entry.runnable) throw refuse(entry.reason ?? 'this build cannot run it');
  const flags: RecipeFlags = { ...recipe.flags };
  const worldSize = Number(flags['world-size'] ?? 1);
  if (worldSize > 1) throw refuse(`recipe '${recipeName}' needs ${worldSize} ranks (world-size ${worldSize}); a hot swap is single-node`);
  const warnings: string[] = [];
  // A family's registry recipe may name more context than this checkpoint was trained for (and
  // size the KV pool for it): the recipe gets the model's own; --max-seq-len on the command line still wins.
  const seqLen = Number(flags['max-seq-len']);
  if (entry.contextLength !== null && seqLen > entry.contextLength) {
    warnings.push(
      `recipe '${recipeName}' of ${entry.id}: max-seq-len ${seqLen} is past the model's own context; using ${entry.contextLength}`,
    );
    flags['max-seq-len'] = entry.contextLength;
  }
  // The socket is bound once: the model serves on the address already bound.
  for (const key of ['bind', 'host', 'port']) {
    if (!(key in flags)) continue;
    warnings.push(`recipe '${recipeName}' of ${entry.id}: ${key} = ${String(flags[key])} ignored (a swap keeps the bound address)`);
    delete flags[key];
  }
  const settings = recipeSettings(flags);
  if ('error' in settings) throw refuse(`recipe '${recipeName}': ${settings.error}`);
  if (settings.engine.expertParallel)
    throw refuse(`recipe '${recipeName}' runs expert parallelism over several ranks; a hot swap is single-node`);
  return {
    id: entry.id,
    recipe: recipeName,
    request: { source: entry.path, fallbackName: entry.id, engine: settings.engine, runtime: settings.runtime },
    warnings: [...warnings, ...settings.warnings],
  };
}
