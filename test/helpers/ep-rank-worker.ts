// An expert worker (rank 1) in a thread of the test process: the seeded random experts of
// moe-experts.ts, cut to rank 1's share, served to the head at workerData's port. Posts its log lines
// and, when it stops, how ('done'). With `stall` it connects and then answers no request until released.
import { parentPort, workerData } from 'node:worker_threads';
import { nativeOps } from '../../src/kernels/index.js';
import { expertRange } from '../../src/model/architectures/expert-placement.js';
import { serveExperts } from '../../src/engine/expert-parallel/index.js';
import type { Hello, ModelIdentity } from '../../src/engine/expert-parallel/protocol.js';
import { randomExperts, shardOf, type ExpertSetShape } from '../../bench/moe-experts.js';

export interface RankWorkerData {
  host: string;
  port: number;
  rank: number;
  worldSize: number;
  identity: ModelIdentity;
  shape: ExpertSetShape;
  /** Set: every moe call waits until word 0 of it is non-zero (the test notifies it), then computes. */
  stall?: SharedArrayBuffer;
  hello?: Partial<Hello>;
}

const d = workerData as RankWorkerData;
const all = randomExperts(d.shape, nativeOps);
const experts = shardOf(all, expertRange(d.shape.numExperts, { rank: 1, worldSize: 2 }));
const stall = d.stall ? new Int32Array(d.stall) : null;
const ops: typeof nativeOps = stall
  ? {
      ...nativeOps,
      moe: (...args) => {
        Atomics.wait(stall, 0, 0, 30_000);
        nativeOps.moe(...args);
      },
    }
  : nativeOps;
const rank = serveExperts({
  host: d.host,
  port: d.port,
  rank: d.rank,
  worldSize: d.worldSize,
  identity: d.identity,
  experts,
  ops,
  hello: d.hello,
  retryMs: { first: 20, max: 200 },
  onEvent: (level, message) => parentPort!.postMessage({ type: 'log', level, message }),
});
void rank.done.then((r) => parentPort!.postMessage({ type: 'done', error: r.error }));
parentPort!.on('message', (m: string) => {
  if (m === 'close') rank.close();
});
