// The synthetic expert worker of bench/expert-parallel.ts: a process (rank 1) holding its half of the
// seeded random experts of bench/moe-experts.ts, serving them to the head at the port given.
//   node dist/bench/expert-parallel-worker.js '{"port": 29500, "shape": {...}, "identity": {...}}'
import { nativeOps } from '../src/kernels/index.js';
import { expertRange } from '../src/model/architectures/expert-placement.js';
import { serveExperts } from '../src/engine/expert-parallel/index.js';
import type { ModelIdentity } from '../src/engine/expert-parallel/protocol.js';
import { randomExperts, shardOf, type ExpertSetShape } from './moe-experts.js';

const { port, shape, identity } = JSON.parse(process.argv[2]) as { port: number; shape: ExpertSetShape; identity: ModelIdentity };
const experts = shardOf(randomExperts(shape, nativeOps), expertRange(shape.numExperts, { rank: 1, worldSize: 2 }));
const rank = serveExperts({
  host: '127.0.0.1',
  port,
  rank: 1,
  worldSize: 2,
  identity,
  experts,
  ops: nativeOps,
  retryMs: { first: 20, max: 200 },
  onEvent: (_level, message) => process.stderr.write(`[rank 1] ${message}\n`),
});
process.once('SIGTERM', () => rank.close());
void rank.done.then(({ error }) => process.exit(error === null ? 0 : 1));
