// Where a mixture-of-experts model's experts run. One process holds them all; with expert
// parallelism (--world-size 2) each rank holds a contiguous share and the head (rank 0), which runs
// attention and routing, sends the rows routed to the other rank's experts over to it.
import type { Checkpoint } from '../types.js';

export interface ExpertShard {
  readonly rank: number;
  readonly worldSize: number;
}

/** The experts [first, end) of `numExperts` that `shard` holds: contiguous, as even as possible. */
export function expertRange(numExperts: number, shard: ExpertShard): [number, number] {
  const { rank, worldSize } = shard;
  if (!Number.isInteger(worldSize) || worldSize < 1 || !Number.isInteger(rank) || rank < 0 || rank >= worldSize)
    throw new RangeError(`rank ${rank} of world size ${worldSize}`);
  return [Math.floor((rank * numExperts) / worldSize), Math.floor(((rank + 1) * numExperts) / worldSize)];
}

/** The experts held by other ranks, as the head's MoE layers call them (one call pair per MoE layer and step). */
export interface RemoteExperts {
  /** Sends the step's rows to the ranks holding the experts not held here; returns at once. */
  start(layer: number, x: Float32Array, n: number, ids: Int32Array, weights: Float32Array, k: number): void;
  /** Waits for their weighted sum [n, hidden] and adds it into `out`. Throws when a rank is gone. */
  finish(out: Float32Array, n: number): void;
}

/** How createModel places a MoE checkpoint's experts (absent: all of them, here). */
export interface ModelOptions {
  readonly experts?: { readonly shard: ExpertShard; readonly remote: RemoteExperts | null };
}

/** Whether `checkpoint` has routed experts (its config names an expert count). */
export function isMoe(checkpoint: Checkpoint): boolean {
  return (checkpoint.config.numExperts ?? 0) > 0;
}
