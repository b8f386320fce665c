// A worker rank's experts: its share of every MoE layer, read and prepared for the ops, nothing else
// of the model (no attention, no embeddings, no KV pool).
import type { MoeExperts, Ops } from '../../kernels/ops.js';
import type { ExpertShard } from '../../model/architectures/expert-placement.js';
import type { Checkpoint } from '../../model/types.js';

/**
 * Per layer, the experts `shard` holds (indexed by global expert id, the others null), or null for
 * a layer without routed experts.
 *
 * The MoE architectures' loader (src/model/architectures/moe.ts `loadExpertShard(checkpoint, ops,
 * shard)`) is not in this build yet: until it is, a worker rank cannot start. Wiring it is this
 * function's body: `return loadExpertShard(checkpoint, ops, shard);`.
 */
export function loadRankExperts(checkpoint: Checkpoint, _ops: Ops, shard: ExpertShard): (MoeExperts | null)[] {
  throw new Error(
    `rank ${shard.rank}: this build cannot load a share of the experts of ${checkpoint.config.architecture} checkpoints yet ` +
      '(the mixture-of-experts architectures are not in it)',
  );
}
