// `svc serve`: from the parsed Config to a listening server. The socket is bound first, so
// /health answers 503 model_not_loaded during start-up; the model is loaded (tokenizer and chat
// template here, weights in the engine worker); then the lifecycle turns Ready and the
// readiness line `Listening on <bind>:<port>` is logged.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../cli/config.js';
import { startEngine, type RunningEngine } from '../engine/engine-client.js';
import { resolveModelSource } from '../model/hub-cache.js';
import { planChatOutput } from '../chat/output-plan.js';
import { readGgufHeader } from '../model/loaders/gguf-header.js';
import { createLogger } from '../ops/log.js';
import { buildApp, DEFAULT_MAX_BODY_BYTES } from './app.js';
import { Lifecycle } from './lifecycle.js';
import { createModelRuntime } from './runtime.js';

/** Exit with a one-line message: start-up problems are the operator's to fix, not stack traces. */
class StartupError extends Error {}

/** `_name_or_path` of a directory's config.json, or `general.name` of a GGUF file. */
function checkpointName(source: string): string | null {
  try {
    if (statSync(source).isFile()) {
      const name = readGgufHeader(source).metadata['general.name'];
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

function maxBodyBytes(): number {
  const raw = process.env.SVC_MAX_BODY_BYTES;
  if (raw === undefined || raw === '') return DEFAULT_MAX_BODY_BYTES;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new StartupError(`SVC_MAX_BODY_BYTES: expected a positive integer, got "${raw}"`);
  return n;
}

export async function serve(config: Config): Promise<void> {
  const log = createLogger();
  let engine: RunningEngine | null = null;
  try {
    const source = resolveModelSource(config.model, config.modelFromPath, config.cacheDir);
    const modelName = config.modelName ?? checkpointName(source) ?? config.model ?? config.modelFromPath ?? source;

    const lifecycle = new Lifecycle('starting');
    const app = buildApp({
      options: {
        modelName,
        maxBodyBytes: maxBodyBytes(),
        defaultMinP: config.defaultMinP,
        defaultTopNSigma: config.defaultTopNSigma,
        toolMaxTokens: config.toolMaxTokens,
        requestTimeoutSec: config.requestTimeout,
        maxSeqLen: config.maxSeqLen,
        disableThinking: config.disableThinking,
      },
      logger: log,
      lifecycle,
      chatOutput: planChatOutput,
    });
    try {
      // Bound now so /health answers 503 while the model loads; ready only at "Listening on".
      await app.listen({
        host: config.bind,
        port: config.port,
        listenTextResolver: (address) => `Socket bound at ${address}; loading the model`,
      });
    } catch (err) {
      throw new StartupError(`cannot listen on ${config.bind}:${config.port}: ${(err as Error).message}`);
    }

    log.info(`Loading ${modelName} from ${source}`);
    engine = await startEngine({
      modelPath: source,
      fastLoad: config.fastLoad,
      kvCacheDtype: config.kvCacheDtype as 'fp8' | 'bf16',
      maxSeqLen: config.maxSeqLen,
      maxBatchSize: config.maxBatchSize,
      maxPrefillTokens: config.maxPrefillTokens,
      maxNumSeqs: config.maxNumSeqs,
      gpuMemoryUtilization: config.gpuMemoryUtilization,
      oomGuardMb: config.oomGuardMb,
      blockSize: 16,
    }).catch((err: Error) => {
      throw new StartupError(err.message);
    });
    const info = engine.info;
    const { runtime, modelToml } = createModelRuntime(source, modelName, engine, {
      toolCallParser: config.toolCallParser,
      disableThinking: config.disableThinking,
      maxThinkingBudget: config.maxThinkingBudget,
    });
    lifecycle.setReady(runtime);

    log.info(
      `Model ${info.config.architecture}: ${info.config.numLayers} layers, hidden ${info.config.hiddenSize}, vocab ${info.config.vocabSize}; ` +
        `weights ${(info.weightBytes / 2 ** 20).toFixed(1)} MiB, loaded in ${info.loadMs} ms; kernels ${info.ops}`,
    );
    log.info(
      `KV pool: ${info.kvPoolTokens} tokens (${info.kvBlocks} blocks of ${info.blockSize}, ${info.kvCacheDtype}, ` +
        `${(info.kvPoolBytes / 2 ** 20).toFixed(1)} MiB; limited by ${info.kvPoolLimitedBy === 'memory' ? 'the memory budget' : '--max-seq-len × --max-num-seqs'})`,
    );
    if (modelToml) log.info(`MODEL.toml: ${modelToml.source}`);
    log.info(
      `Tool-call parser: ${runtime.chat.toolCallParser}; reasoning: ${runtime.chat.reasoning ? (runtime.chat.disableThinking ? 'disabled' : 'on') : 'off'}`,
    );
    if (runtime.chatTemplate === null) log.warn('the model has no chat template: /v1/chat/completions will refuse requests');
    if (config.bind === '0.0.0.0' || config.bind === '::') {
      log.warn(
        `the server is exposed on all interfaces (${config.bind}): anyone on the LAN can reach it; use --require-auth or --bind 127.0.0.1`,
      );
    } else if (config.bind === '127.0.0.1' || config.bind === 'localhost' || config.bind === '::1') {
      log.info('Bound to loopback only: other machines cannot connect (use --bind 0.0.0.0 to expose it)');
    }
    // The readiness marker comes last: everything above is printed once a client sees it.
    log.info(`Listening on ${config.bind}:${config.port}`);

    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log.info(`${signal}: shutting down`);
        void app
          .close()
          .then(() => engine?.shutdown())
          .finally(resolve);
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });
  } catch (err) {
    if (engine) await engine.shutdown().catch(() => undefined);
    if (err instanceof StartupError || (err instanceof Error && !(err instanceof TypeError) && !(err instanceof RangeError))) {
      process.stderr.write(`svc: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
