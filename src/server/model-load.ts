// Loading one model: the engine worker on the weights, the prompt workers and this thread's
// tokenizer meanwhile, then the runtime and the log lines describing what was loaded. The one path
// for start-up (serve.ts) and for a swap (model-swap.ts), so both load a model the same way.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ModelRuntime } from '../chat/model-runtime.js';
import { startEngine, type EngineOptions, type RunningEngine } from '../engine/engine-client.js';
import { readGgufHeader } from '../model/loaders/gguf-header.js';
import type { LoadProgress } from '../model/types.js';
import { closeModelRuntime, createModelRuntime, finishPromptSide, startPromptSide, type RuntimeSettings } from './runtime.js';

/** Tokens per KV block. */
export const KV_BLOCK_SIZE = 16;

export interface LoadRequest {
  /** A directory or .gguf file, resolved. */
  readonly source: string;
  /** Name GET /v1/models reports: --model-name, else the checkpoint's own name, else `fallbackName`. */
  readonly servedName?: string;
  readonly fallbackName: string;
  readonly engine: Readonly<Omit<EngineOptions, 'modelPath' | 'blockSize'>>;
  readonly runtime: Readonly<RuntimeSettings>;
}

export interface LoadedModel {
  readonly engine: RunningEngine;
  readonly runtime: ModelRuntime;
  readonly modelName: string;
  readonly source: string;
}

/** `_name_or_path` of a directory's config.json, or `general.name` of a GGUF file. */
export function checkpointName(source: string): string | null {
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

/** Loads `request`; on failure nothing of it is left running. */
export async function loadModel(
  request: LoadRequest,
  log: Logger,
  onProgress?: (p: LoadProgress) => void,
  signal?: AbortSignal,
): Promise<LoadedModel> {
  const { source } = request;
  const modelName = request.servedName ?? checkpointName(source) ?? request.fallbackName;
  log.info(`Loading ${modelName} from ${source}`);
  // The engine worker starts on the weights first; the tokenizer is built meanwhile.
  // The engine's lines (the packed-weights cache's; with expert parallelism the link's: waiting for
  // rank 1, connected, lost) go to the log, for the engine's whole life.
  const loading = startEngine({ ...request.engine, modelPath: source, blockSize: KV_BLOCK_SIZE }, onProgress, signal, (e) =>
    log[e.level](e.message),
  );
  loading.catch(() => undefined);
  let runtime: ModelRuntime | null = null;
  let engine: RunningEngine | null = null;
  const started = (() => {
    try {
      return startPromptSide(source);
    } catch (err) {
      return err as Error;
    }
  })();
  try {
    if (started instanceof Error) throw started;
    const side = finishPromptSide(started);
    engine = await loading;
    const made = createModelRuntime(source, modelName, engine, request.runtime, side);
    runtime = made.runtime;
    // Ready once the prompt workers have their tokenizers, so the first requests do not wait for them.
    await runtime.prompts?.ready();
    logLoaded(log, request, engine, runtime, made.modelToml?.source ?? null, made.modelToml?.model.defaultNumDrafts ?? 1);
    return { engine, runtime, modelName, source };
  } catch (err) {
    if (runtime !== null) await closeModelRuntime(runtime).catch(() => undefined);
    else if (!(started instanceof Error)) await started.prompts.close().catch(() => undefined);
    if (engine !== null) await engine.shutdown().catch(() => undefined);
    else await loading.then((e) => e.shutdown()).catch(() => undefined);
    throw err;
  }
}

/** Releases a loaded model: its prompt workers, then its engine worker (weights and KV pool). */
export async function unloadModel(model: LoadedModel): Promise<void> {
  await closeModelRuntime(model.runtime);
  await model.engine.shutdown();
}

function logLoaded(
  log: Logger,
  request: LoadRequest,
  engine: RunningEngine,
  runtime: ModelRuntime,
  modelTomlSource: string | null,
  defaultNumDrafts: number,
): void {
  const info = engine.info;
  log.info(
    `Model ${info.config.architecture}: ${info.config.numLayers} layers, hidden ${info.config.hiddenSize}, vocab ${info.config.vocabSize}; ` +
      `weights ${(info.weightBytes / 2 ** 20).toFixed(1)} MiB, loaded in ${info.loadMs} ms; kernels ${info.ops}`,
  );
  const cache = info.packedCache;
  if (cache !== null) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
    if (cache.mapped > 0)
      log.info(
        `Packed weights: ${cache.mapped} matrices (${gib(cache.mappedBytes)}) mapped from the cache ${cache.file}` +
          (cache.packed > 0 ? `; ${cache.packed} packed now (${gib(cache.packedBytes)}), the file is rewritten in the background` : ''),
      );
    else if (cache.packed > 0)
      log.info(
        `Packed weights: ${cache.packed} matrices (${gib(cache.packedBytes)}) packed now (cache: ${cache.ignored ?? 'not used'}); ` +
          `written to ${cache.file} in the background, for the next load to map`,
      );
  }
  log.info(
    `KV pool: ${info.kvPoolTokens} tokens (${info.kvBlocks} blocks of ${info.blockSize}; ${info.kvPlan}: ${info.kvBytesPerToken} bytes per token; ` +
      `${(info.kvPoolBytes / 2 ** 20).toFixed(1)} MiB; limited by ${info.kvPoolLimitedBy === 'memory' ? 'the memory budget' : '--max-seq-len × --max-num-seqs'})`,
  );
  const ownContext = info.config.maxPositionEmbeddings;
  const maxSeqLen = request.engine.maxSeqLen;
  const from =
    maxSeqLen === undefined
      ? "the model's max_position_embeddings; --max-seq-len sets another"
      : `--max-seq-len; the model's own is ${ownContext}`;
  log.info(`Context length: ${info.maxSeqLen} tokens (${from})`);
  if (maxSeqLen !== undefined && maxSeqLen > ownContext) {
    log.warn(
      `--max-seq-len ${maxSeqLen} exceeds the model's own context length (max_position_embeddings ${ownContext}): ` +
        'positions past it were never trained and output there is likely to degrade',
    );
  }
  if (modelTomlSource) log.info(`MODEL.toml: ${modelTomlSource}`);
  const speculative = request.engine.speculative;
  if (speculative && info.drafter) {
    // Spec: while --num-drafts is still 1, the model's MODEL.toml default_num_drafts replaces it.
    const fromToml = speculative.numDrafts === 1 ? defaultNumDrafts : speculative.numDrafts;
    if (fromToml !== speculative.numDrafts) engine.setNumDrafts(fromToml);
    log.info(`Speculative decoding: ${info.drafter} drafter, ${fromToml} draft tokens per verify step (K = ${fromToml + 1})`);
    if (info.drafterDetail) log.info(`Drafter: ${info.drafterDetail}`);
  }
  log.info(
    `Tool-call parser: ${runtime.chat.toolCallParser}; reasoning: ${runtime.chat.reasoning ? (runtime.chat.disableThinking ? 'disabled' : 'on') : 'off'}`,
  );
  if (runtime.chatTemplate === null) log.warn('the model has no chat template: /v1/chat/completions will refuse requests');
}
