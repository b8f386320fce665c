// `svc serve`: from ServeOptions to a listening server. The socket is bound first, so
// /health answers 503 model_not_loaded during start-up; the model is loaded (tokenizer and chat
// template here, weights in the engine worker); then the lifecycle turns Ready and the
// readiness line `Listening on <bind>:<port>` is logged.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readEnv } from '../common/env.js';
import { startEngine, type EngineOptions, type RunningEngine } from '../engine/engine-client.js';
import { resolveModelSource } from '../model/hub-cache.js';
import { planChatOutput } from '../chat/output-plan.js';
import { readGgufHeader } from '../model/loaders/gguf-header.js';
import { loadApiKeys, type AuthSettings } from '../ops/auth.js';
import { DumpFile } from '../ops/dump-file.js';
import { createLogger } from '../ops/logger.js';
import { loadProgressReporter } from '../ops/load-progress.js';
import { formatProfileTable } from '../ops/profile-table.js';
import { describeRateLimits, rateLimitsFromEnv, RateLimiter } from '../ops/rate-limiter.js';
import { buildApp, type AppOptions } from './app.js';
import { httpLimitsFromEnv } from './http-server.js';
import { Lifecycle } from './lifecycle.js';
import {
  closeModelRuntime,
  createModelRuntime,
  finishPromptSide,
  startPromptSide,
  type RuntimeSettings,
  type StartedPromptSide,
} from './runtime.js';

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
  };
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

/** Tokens per KV block. */
const KV_BLOCK_SIZE = 16;

/** Exit with a one-line message: start-up problems are the operator's to fix, not stack traces. */
class StartupError extends Error {}

/** How long shutdown waits for the engine's --profile table (it answers between steps). */
const PROFILE_WAIT_MS = 5000;

/** --profile: the engine's table, printed to stderr at shutdown (whatever the log level: it was asked for). */
async function printProfile(engine: RunningEngine | null): Promise<void> {
  if (engine === null) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), PROFILE_WAIT_MS)));
  const table = await Promise.race([engine.profile().catch(() => null), late]);
  clearTimeout(timer);
  if (table !== null) process.stderr.write(formatProfileTable(table));
}

/** `_name_or_path` of a directory's config.json, or `general.name` of a GGUF file. */
function checkpointName(source: string): string | null {
  try {
    if (statSync(source).isFile()) {
      const name = readGgufHeader(source, { skipLargeArrays: true }).metadata['general.name'];
      return typeof name === 'string' && name !== '' ? name : null;
    }
    const configPath = join(source, 'config.json');
    if (!existsSync(configPath)) return null;
    const name = (JSON.parse(readFileSync(configPath, 'utf8')) as { _name_or_path?: unknown })._name_or_path;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    return null;
  }
}

export async function serve(options: ServeOptions): Promise<void> {
  const { host, port } = options.listen;
  let engine: RunningEngine | null = null;
  // Stops the engine worker while it is still loading (a start-up error on the main thread).
  const stopLoading = new AbortController();
  // The tokenizer and the prompt workers, built while the engine worker loads the weights.
  let started: StartedPromptSide | null = null;
  let dump: DumpFile | null = null;
  try {
    // An invalid SVC_LOG_LEVEL, SVC_MAX_BODY_BYTES or SVC_RATE_LIMIT_* is a one-line start-up
    // error (EnvError), and so is an unreadable or empty --auth-tokens-file (AuthConfigError).
    const log = createLogger();
    const apiKeys = options.auth === null ? null : loadApiKeys(options.auth);
    const rateLimits = rateLimitsFromEnv();
    const http = httpLimitsFromEnv();
    const source = resolveModelSource(options.model.id, options.model.path, options.model.cacheDir);
    // The engine worker starts on the weights first: everything below, up to the tokenizer, overlaps
    // with it. Its progress is shown once the socket is bound, after the lines announcing the load.
    const progress = loadProgressReporter(log);
    let showProgress = false;
    const loading = startEngine(
      { ...options.engine, modelPath: source, blockSize: KV_BLOCK_SIZE },
      (p) => {
        if (showProgress) progress.update(p);
      },
      stopLoading.signal,
    )
      .catch((err: Error) => {
        throw new StartupError(err.message);
      })
      .finally(() => progress.done());
    // Settled here too, so a start-up error before the await below is no unhandled rejection.
    loading.catch(() => undefined);
    // Then the prompt worker, which builds its tokenizer while the app is built and bound.
    started = startPromptSide(source);
    const modelName = options.model.servedName ?? checkpointName(source) ?? options.model.id ?? options.model.path ?? source;

    // Process-level: opened once here, so a model swap keeps writing to the same file.
    if (options.dump !== null) {
      const dir = options.dump;
      dump = await DumpFile.open(dir, (message) => log.warn(message)).catch((err: NodeJS.ErrnoException) => {
        throw new StartupError(`--dump ${dir}: cannot create the dump file (${err.code ?? err.message})`);
      });
    }

    const lifecycle = new Lifecycle('starting');
    const app = buildApp({
      options: {
        ...options.app,
        modelName,
        maxBodyBytes: readEnv('SVC_MAX_BODY_BYTES'),
        storeMaxRecords: readEnv('SVC_RESPONSES_STORE_MAX'),
        storeMaxBytes: readEnv('SVC_RESPONSES_STORE_MAX_BYTES'),
        http,
      },
      logger: log,
      lifecycle,
      chatOutput: planChatOutput,
      apiKeys,
      // Built once per process: buckets outlive a model swap.
      rateLimiter: rateLimits === null ? null : new RateLimiter(rateLimits),
      dump,
    });
    try {
      // Bound now so /health answers 503 while the model loads; ready only at "Listening on".
      await app.listen({
        host,
        port,
        listenTextResolver: (address) => `Socket bound at ${address}; loading the model`,
      });
    } catch (err) {
      throw new StartupError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
    }

    log.info(`Loading ${modelName} from ${source}`);
    showProgress = true;
    // This thread's tokenizer, while the engine still loads.
    const side = finishPromptSide(started);
    engine = await loading;
    const info = engine.info;
    const { runtime, modelToml } = createModelRuntime(source, modelName, engine, options.runtime, side);
    // Ready once the prompt workers have their tokenizers, so the first requests do not wait for them.
    await runtime.prompts?.ready();
    lifecycle.setReady(runtime);

    log.info(
      `Model ${info.config.architecture}: ${info.config.numLayers} layers, hidden ${info.config.hiddenSize}, vocab ${info.config.vocabSize}; ` +
        `weights ${(info.weightBytes / 2 ** 20).toFixed(1)} MiB, loaded in ${info.loadMs} ms; kernels ${info.ops}`,
    );
    log.info(
      `KV pool: ${info.kvPoolTokens} tokens (${info.kvBlocks} blocks of ${info.blockSize}; ${info.kvPlan}: ${info.kvBytesPerToken} bytes per token; ` +
        `${(info.kvPoolBytes / 2 ** 20).toFixed(1)} MiB; limited by ${info.kvPoolLimitedBy === 'memory' ? 'the memory budget' : '--max-seq-len × --max-num-seqs'})`,
    );
    const ownContext = info.config.maxPositionEmbeddings;
    const from =
      options.engine.maxSeqLen === undefined
        ? "the model's max_position_embeddings; --max-seq-len sets another"
        : `--max-seq-len; the model's own is ${ownContext}`;
    log.info(`Context length: ${info.maxSeqLen} tokens (${from})`);
    if (options.engine.maxSeqLen !== undefined && options.engine.maxSeqLen > ownContext) {
      log.warn(
        `--max-seq-len ${options.engine.maxSeqLen} exceeds the model's own context length (max_position_embeddings ${ownContext}): ` +
          'positions past it were never trained and output there is likely to degrade',
      );
    }
    if (modelToml) log.info(`MODEL.toml: ${modelToml.source}`);
    const speculative = options.engine.speculative;
    if (speculative && info.drafter) {
      // Spec: while --num-drafts is still 1, the model's MODEL.toml default_num_drafts replaces it.
      const fromToml = speculative.numDrafts === 1 ? (modelToml?.model.defaultNumDrafts ?? 1) : speculative.numDrafts;
      if (fromToml !== speculative.numDrafts) engine.setNumDrafts(fromToml);
      log.info(`Speculative decoding: ${info.drafter} drafter, ${fromToml} draft tokens per verify step (K = ${fromToml + 1})`);
      if (info.drafterDetail) log.info(`Drafter: ${info.drafterDetail}`);
    }
    log.info(
      `Tool-call parser: ${runtime.chat.toolCallParser}; reasoning: ${runtime.chat.reasoning ? (runtime.chat.disableThinking ? 'disabled' : 'on') : 'off'}`,
    );
    if (runtime.chatTemplate === null) log.warn('the model has no chat template: /v1/chat/completions will refuse requests');
    // How many keys, never which.
    log.info(apiKeys === null ? 'Authentication: off' : `Authentication: on (${apiKeys.size} API ${apiKeys.size === 1 ? 'key' : 'keys'})`);
    if (rateLimits !== null) log.info(describeRateLimits(rateLimits));
    if (dump !== null) log.info(`Dump: every request and its response are written to ${dump.path}`);
    if (options.engine.profile) log.info('Profile: per-op timings at GET /debug/profile, and printed at shutdown');
    if (options.engine.adaptiveSampling) log.info('Adaptive sampling: confident rows take the argmax');
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

    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log.info(`${signal}: shutting down`);
        void app
          .close()
          .then(() => printProfile(engine))
          .then(() => dump?.close())
          .then(() => closeModelRuntime(runtime))
          .then(() => engine?.shutdown())
          .finally(resolve);
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
  } catch (err) {
    await started?.prompts.close();
    await dump?.close().catch(() => undefined);
    if (engine) await engine.shutdown().catch(() => undefined);
    else stopLoading.abort();
    if (err instanceof StartupError || (err instanceof Error && !(err instanceof TypeError) && !(err instanceof RangeError))) {
      process.stderr.write(`svc: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
