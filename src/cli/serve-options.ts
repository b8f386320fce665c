// The frozen Config → the server's ServeOptions: the one place that says which flag feeds which
// part of start-up (the HTTP app, the engine worker, the model's chat settings). serve() takes
// only ServeOptions, so the server never sees the CLI's Config.
import type { ServeOptions } from '../server/serve.js';
import type { ExpertRankServeOptions } from '../server/expert-rank.js';
import type { RecipeSettings } from '../server/model-swap.js';
import type { RecipeFlags } from '../model/library.js';
import type { SpeculativeOptions } from '../engine/messages.js';
import { checkImplemented, type Config } from './config.js';
import { parseArgs } from './parse.js';
import { packedCacheRoot } from '../model/loaders/packed-cache.js';

/** `argv`: the command line the Config came from; a Library recipe's flags are parsed on top of it. */
export function toServeOptions(c: Config, argv: readonly string[] = ['serve']): ServeOptions {
  return {
    model: { id: c.model, path: c.modelFromPath, cacheDir: c.cacheDir, servedName: c.modelName, demo: c.demo },
    // --no-auto-swap wins in any order (the parser applies it last).
    autoSwap: c.autoSwap,
    recipeSettings: (flags) => recipeSettings(argv, flags),
    listen: { host: c.bind, port: c.port },
    app: {
      defaultMinP: c.defaultMinP,
      defaultTopNSigma: c.defaultTopNSigma,
      toolMaxTokens: c.toolMaxTokens,
      requestTimeoutSec: c.requestTimeout,
      disableThinking: c.disableThinking,
      autoCompact: c.autoCompact ?? null,
      allowedHosts: c.allowedHosts ?? [],
      allowedOrigins: c.allowedOrigins ?? [],
      profile: c.profile,
      images: {
        allowPrivateUrls: c.allowPrivateImageUrls,
        maxBytes: c.maxImageBytes,
        maxPixels: c.maxImagePixels,
        maxImages: c.maxImagesPerRequest,
        fetchTimeoutSec: c.imageFetchTimeout,
      },
    },
    engine: {
      fastLoad: c.fastLoad,
      packedCacheDir: c.packedCache && c.fastLoad ? packedCacheRoot(c.packedCacheDir) : null,
      kvCacheDtype: c.kvCacheDtype,
      kvHighPrecisionLayers: c.kvHighPrecisionLayers,
      fp8KvCalibrationTokens: c.fp8KvCalibrationTokens,
      maxSeqLen: c.maxSeqLen,
      maxBatchSize: c.maxBatchSize,
      maxPrefillTokens: c.maxPrefillTokens,
      maxNumSeqs: c.maxNumSeqs,
      gpuMemoryUtilization: c.gpuMemoryUtilization,
      oomGuardMb: c.oomGuardMb,
      enablePrefixCaching: c.enablePrefixCaching,
      ssmCacheSlots: c.ssmCacheSlots,
      ssmCheckpointInterval: c.ssmCheckpointInterval,
      swapSpaceBytes: Math.round(c.swapSpaceGb * 1024 ** 3),
      speculative: speculativeOptions(c),
      profile: c.profile,
      adaptiveSampling: c.adaptiveSampling,
      schedulingPolicy: c.schedulingPolicy,
      tbtDeadlineMs: c.tbtDeadlineMs,
      // --world-size 2 (this is rank 0): the head listens for rank 1 at --master-addr, else its --bind address.
      expertParallel: c.worldSize > 1 ? { worldSize: c.worldSize, host: c.masterAddr ?? c.bind, port: c.masterPort } : null,
    },
    runtime: {
      toolCallParser: c.toolCallParser,
      disableThinking: c.disableThinking,
      maxThinkingBudget: c.maxThinkingBudget,
    },
    // The tokens file is read by serve() at start-up (its errors exit 1); without --require-auth
    // the key flags have no effect (checkCrossFlagRules warns).
    auth: c.requireAuth ? { tokens: c.authToken ?? [], tokensFile: c.authTokensFile } : null,
    // Process-level: serve opens it once, so it outlives model swaps.
    dump: c.dump ?? null,
  };
}

/** --rank 1: an expert worker's settings (checkCrossFlagRules has made sure it has a MODEL and --master-addr). */
export function toExpertRankOptions(c: Config): ExpertRankServeOptions {
  return {
    model: { id: c.model, path: c.modelFromPath, cacheDir: c.cacheDir, demo: c.demo },
    rank: c.rank,
    worldSize: c.worldSize,
    master: { host: c.masterAddr!, port: c.masterPort },
    fastLoad: c.fastLoad,
  };
}

/** A recipe's flags, then the command line's (an operator's explicit flag wins over a recipe), through the same parser and checks. */
function recipeSettings(argv: readonly string[], flags: RecipeFlags): RecipeSettings {
  const extra = Object.entries(flags).flatMap(([name, value]) =>
    value === true ? [`--${name}`] : value === false ? [] : [`--${name}`, String(value)],
  );
  const at = argv.indexOf('serve') + 1;
  const result = parseArgs([...argv.slice(0, at), ...extra, ...argv.slice(at)]);
  if (result.kind === 'error') return { error: result.message.replace(/^svc: /, '') };
  if (result.kind !== 'serve') return { error: 'not a serve configuration' };
  const unbuilt = checkImplemented(result.config);
  if (unbuilt !== undefined) return { error: unbuilt.replace(/^svc: /, '') };
  const options = toServeOptions(result.config, argv);
  return { engine: options.engine, runtime: options.runtime, warnings: result.warnings.map((w) => w.replace(/^svc: warning: /, '')) };
}

/** The drafter asked for: several modes are not an error, the spec's precedence picks n-gram, then self, then MTP. */
function speculativeOptions(c: Config): SpeculativeOptions | null {
  const mode = c.ngramSpeculative ? 'ngram' : c.selfSpeculative ? 'self' : c.speculative ? 'mtp' : null;
  if (mode === null) return null;
  return { mode, numDrafts: c.numDrafts, mtpQuantization: c.mtpQuantization, mtpVocab: c.mtpVocab };
}
