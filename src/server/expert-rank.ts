// `svc serve MODEL --rank 1 --world-size 2 --master-addr HOST`: an expert worker. No HTTP listener,
// no scheduler, no KV pool: it loads only its share of the experts of MODEL and answers the head's
// expert computations over TCP (src/engine/expert-parallel/), reconnecting whenever the head goes
// away, until it is stopped (SIGINT, SIGTERM) or the head refuses it (another model, world size or
// rank: exit 1 with the reason).
import { defaultOps } from '../kernels/index.js';
import { expertRange, isMoe } from '../model/architectures/index.js';
import { resolveModelSource } from '../model/hub-cache.js';
import { DEMO_MODEL_PATH } from '../model/library.js';
import { loadCheckpoint } from '../model/loaders/index.js';
import type { MoeExperts } from '../kernels/ops.js';
import { modelIdentity, serveExperts } from '../engine/expert-parallel/index.js';
import { loadExpertShard } from '../model/architectures/index.js';
import { createLogger } from '../ops/logger.js';

export interface ExpertRankServeOptions {
  /** What to load, as for the head: `path` wins, else hub id `id` in the cache, else the demo model. */
  readonly model: { readonly id?: string; readonly path?: string; readonly cacheDir?: string; readonly demo?: boolean };
  readonly rank: number;
  readonly worldSize: number;
  /** The head's rendezvous address (--master-addr, --master-port). */
  readonly master: { readonly host: string; readonly port: number };
  readonly fastLoad: boolean;
}

/** Bytes of the prepared expert weights held. */
function heldBytes(layers: readonly (MoeExperts | null)[]): number {
  let bytes = 0;
  for (const l of layers)
    for (const list of l === null ? [] : [l.gate, l.up, l.down]) for (const w of list) bytes += w?.data.byteLength ?? 0;
  return bytes;
}

export async function serveExpertRank(o: ExpertRankServeOptions): Promise<void> {
  const { rank, worldSize } = o;
  const { host, port } = o.master;
  try {
    // An invalid SVC_LOG_LEVEL is a one-line start-up error, as for the head.
    const log = createLogger();
    const { id, path, cacheDir, demo } = o.model;
    const source = demo ? DEMO_MODEL_PATH : resolveModelSource(id, path, cacheDir);
    log.info(
      `Rank ${rank} of ${worldSize}: expert worker of the head at ${host}:${port}; no HTTP listener ` +
        '(the head serves every request; this rank computes its share of the experts)',
    );
    log.info(`Loading rank ${rank}'s share of the experts of ${source}`);
    const t0 = performance.now();
    const checkpoint = loadCheckpoint(source, { fastLoad: o.fastLoad });
    const { config } = checkpoint;
    if (!isMoe(checkpoint))
      throw new Error(
        `--rank ${rank}: ${config.architecture} "${config.nameOrPath ?? source}" is not a mixture-of-experts model ` +
          '(its config names no routed experts); expert parallelism splits the experts of one',
      );
    const shard = { rank, worldSize };
    const ops = defaultOps();
    const experts = loadExpertShard(checkpoint, ops, shard);
    const [first, end] = expertRange(config.numExperts!, shard);
    const moeLayers = experts.filter((e) => e !== null).length;
    log.info(
      `Holding experts [${first}, ${end}) of ${config.numExperts} in each of ${moeLayers} MoE layers ` +
        `(${(heldBytes(experts) / 2 ** 20).toFixed(1)} MiB), loaded in ${Math.round(performance.now() - t0)} ms; kernels ${ops.name}`,
    );
    const server = serveExperts({
      host,
      port,
      rank,
      worldSize,
      identity: modelIdentity(checkpoint),
      experts,
      ops,
      onEvent: (level, message) => log[level](message),
    });
    const stop = (signal: string) => {
      log.info(`${signal}: shutting down`);
      server.close();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    const { error } = await server.done;
    if (error !== null) throw new Error(error);
  } catch (err) {
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
