// `svc serve`: from ServeOptions to a listening server. The socket is bound first, so
// /health answers 503 model_not_loaded during start-up; the model is loaded (tokenizer and chat
// template here, weights in the engine worker); then the lifecycle turns Ready and the
// readiness line `Listening on <bind>:<port>` is logged.
import { readEnv } from '../common/env.js';
import type { EngineOptions, RunningEngine } from '../engine/engine-client.js';
import { resolveModelSource } from '../model/hub-cache.js';
import { DEMO_MODEL_ID, DEMO_MODEL_PATH, Library } from '../model/library.js';
import { planChatOutput } from '../chat/output-plan.js';
import { loadApiKeys, type AuthSettings } from '../ops/auth.js';
import { DumpFile } from '../ops/dump-file.js';
import { createLogger } from '../ops/logger.js';
import { loadProgressReporter } from '../ops/load-progress.js';
import { formatProfileTable } from '../ops/profile-table.js';
import { describeRateLimits, rateLimitsFromEnv, RateLimiter } from '../ops/rate-limiter.js';
import { buildApp, type AppOptions } from './app.js';
import { httpLimitsFromEnv } from './http-server.js';
import { Lifecycle } from './lifecycle.js';
import { autoSwapper } from './auto-swap.js';
import { ModelSwitcher, type RecipeSettings, type SwapPlan } from './model-swap.js';
import type { RuntimeSettings } from './runtime.js';

/**
 * Everything `serve` starts from, settled before start-up (the CLI maps its Config to this in
 * src/cli/serve-options.ts). What only start-up can know (the resolved model path, the served
 * name, SVC_MAX_BODY_BYTES) is filled in by `serve`.
 */
export interface ServeOptions {
  /** What to load: `path` (a directory or .gguf file) wins; else hub id `id` in the cache. */
  readonly model: {
    readonly id?: string;
    readonly path?: string;
    /** Hub cache root; default from HF_HUB_CACHE / HF_HOME. */
    readonly cacheDir?: string;
    /** Name GET /v1/models reports; default the checkpoint's own name, else `id` or `path`. */
    readonly servedName?: string;
    /** --demo: the demo model carried in the repository. */
    readonly demo?: boolean;
  };
  /** --auto-swap (and not --no-auto-swap): a request naming another Library model swaps to it. */
  readonly autoSwap?: boolean;
  /** A Library recipe's flags as engine and runtime settings (the CLI's parser, on top of the command line). */
  readonly recipeSettings?: (flags: Record<string, string | number | boolean>) => RecipeSettings;
  readonly listen: { readonly host: string; readonly port: number };
  /** The HTTP app's options, less the model name, body limit and connection limits (from the environment). */
  readonly app: Readonly<Omit<AppOptions, 'modelName' | 'maxBodyBytes' | 'http'>>;
  /** The engine worker's options, less the model path and name and the KV block size. */
  readonly engine: Readonly<Omit<EngineOptions, 'modelPath' | 'blockSize'>>;
  /** The loaded model's chat settings (tool-call parser, thinking). */
  readonly runtime: Readonly<RuntimeSettings>;
  /** Where the API keys come from when --require-auth is on; null: no key needed. */
  readonly auth: AuthSettings | null;
  /** --dump: the directory every exchange is written to (src/ops/dump.ts); null: none. */
  readonly dump: string | null;
}

/** Exit with a one-line message: start-up problems are the operator's to fix, not stack traces. */
class StartupError extends Error {}

/** How long shutdown waits for the engine's --profile table (it answers between steps). */
const PROFILE_WAIT_MS = 5000;

/** --profile: the engine's table, printed to stderr at shutdown (whatever the log level: it was asked for). */
async function printProfile(engine: RunningEngine | undefined): Promise<void> {
  if (engine === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), PROFILE_WAIT_MS)));
  const table = await Promise.race([engine.profile().catch(() => null), late]);
  clearTimeout(timer);
  if (table !== null) process.stderr.write(formatProfileTable(table));
}

/** The model named on the command line (MODEL, --model-from-path, --demo) as a swap plan; null: none. */
function firstPlan(options: ServeOptions, library: Library): SwapPlan | null {
  const { id, path, cacheDir, servedName, demo } = options.model;
  if (!demo && id === undefined && path === undefined) return null;
  const source = demo ? DEMO_MODEL_PATH : resolveModelSource(id, path, cacheDir);
  // A model given by path joins the Library, so a swap can come back to it.
  const libraryId = demo ? DEMO_MODEL_ID : path !== undefined ? library.add(source).id : id!;
  return {
    id: libraryId,
    recipe: 'default',
    request: { source, servedName, fallbackName: id ?? path ?? libraryId, engine: options.engine, runtime: options.runtime },
    warnings: [],
  };
}

export async function serve(options: ServeOptions): Promise<void> {
  const { host, port } = options.listen;
  let dump: DumpFile | null = null;
  let switcher: ModelSwitcher | null = null;
  try {
    // An invalid SVC_LOG_LEVEL, SVC_MAX_BODY_BYTES or SVC_RATE_LIMIT_* is a one-line start-up
    // error (EnvError), and so is an unreadable or empty --auth-tokens-file (AuthConfigError).
    const log = createLogger();
    const apiKeys = options.auth === null ? null : loadApiKeys(options.auth);
    const rateLimits = rateLimitsFromEnv();
    const http = httpLimitsFromEnv();
    const library = new Library(options.model.cacheDir);
    const first = firstPlan(options, library);

    // Process-level: opened once here, so a model swap keeps writing to the same file.
    if (options.dump !== null) {
      const dir = options.dump;
      dump = await DumpFile.open(dir, (message) => log.warn(message)).catch((err: NodeJS.ErrnoException) => {
        throw new StartupError(`--dump ${dir}: cannot create the dump file (${err.code ?? err.message})`);
      });
    }

    const lifecycle = new Lifecycle(first === null ? 'no_model' : 'starting', options.engine.expertParallel?.worldSize ?? 1);
    // Routes read the served name per request: a swap updates it here.
    const appOptions: AppOptions = {
      ...options.app,
      modelName: first?.request.servedName ?? first?.id ?? '',
      maxBodyBytes: readEnv('SVC_MAX_BODY_BYTES'),
      storeMaxRecords: readEnv('SVC_RESPONSES_STORE_MAX'),
      storeMaxBytes: readEnv('SVC_RESPONSES_STORE_MAX_BYTES'),
      http,
    };
    const recipeSettings =
      options.recipeSettings ?? (() => ({ engine: options.engine, runtime: options.runtime, warnings: [] }) satisfies RecipeSettings);
    switcher = new ModelSwitcher({ lifecycle, library, log, recipeSettings, onServed: (name) => (appOptions.modelName = name) });
    const app = buildApp({
      options: appOptions,
      logger: log,
      lifecycle,
      chatOutput: planChatOutput,
      apiKeys,
      // Built once per process: buckets outlive a model swap.
      rateLimiter: rateLimits === null ? null : new RateLimiter(rateLimits),
      dump,
      switcher,
      autoSwap: options.autoSwap ? autoSwapper(switcher) : null,
    });
    try {
      // Bound now so /health answers 503 while the model loads; ready only at "Listening on".
      await app.listen({
        host,
        port,
        listenTextResolver: (address) => `Socket bound at ${address}; ${first === null ? 'no model loaded' : 'loading the model'}`,
      });
    } catch (err) {
      throw new StartupError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }

    if (first !== null) {
      const progress = loadProgressReporter(log);
      try {
        await switcher.loadFirst(first, (p) => progress.update(p));
      } finally {
        progress.done();
      }
    } else {
      log.info('No model loaded: pick one in the Library (GET /admin/library, POST /admin/load), or start with MODEL or --demo');
    }
    // How many keys, never which.
    log.info(apiKeys === null ? 'Authentication: off' : `Authentication: on (${apiKeys.size} API ${apiKeys.size === 1 ? 'key' : 'keys'})`);
    if (rateLimits !== null) log.info(describeRateLimits(rateLimits));
    if (dump !== null) log.info(`Dump: every request and its response are written to ${dump.path}`);
    if (options.engine.profile) log.info('Profile: per-op timings at GET /debug/profile, and printed at shutdown');
    if (options.engine.adaptiveSampling) log.info('Adaptive sampling: confident rows take the argmax');
    if (options.autoSwap) log.info('Auto-swap: a request whose `model` names another Library model loads it');
    if (apiKeys === null && (host === '0.0.0.0' || host === '::')) {
      log.warn(
        `the server is exposed on all interfaces (${host}) without authentication: anyone on the network can use it; ` +
          'add --require-auth with --auth-tokens-file FILE (or --auth-token KEY), or use --bind 127.0.0.1',
      );
    } else if (host === '127.0.0.1' || host === 'localhost' || host === '::1') {
      log.info('Bound to loopback only: other machines cannot connect (use --bind 0.0.0.0 to expose it)');
    }
    if (options.app.allowedOrigins && options.app.allowedOrigins.length > 0)
      log.info(`CORS: allowed origins ${options.app.allowedOrigins.join(', ')}`);
    // The readiness marker comes last: everything above is printed once a client sees it.
    log.info(`Listening on ${host}:${port}`);

    const running = switcher;
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log.info(`${signal}: shutting down`);
        void app
          .close()
          .then(() => printProfile(lifecycle.runtime?.engine as RunningEngine | undefined))
          .then(() => dump?.close())
          .then(() => running.close())
          .finally(resolve);
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
  } catch (err) {
    await dump?.close().catch(() => undefined);
    await switcher?.close().catch(() => undefined);
    if (err instanceof StartupError || (err instanceof Error && !(err instanceof TypeError) && !(err instanceof RangeError))) {
      process.stderr.write(`svc: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
