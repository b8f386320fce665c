// Server state and what the routes do in each. The listener is up in every state; only Ready
// has a model, so routes that need one (all protocol routes, /v1/models) and /health answer
// 503 `model_not_loaded` (retriable) in the others:
//
//   state          /health   /v1/models, protocol routes
//   Starting       503       503   (loading weights; serve.ts flips to Ready before it logs "Listening on")
//   NoModelLoaded  503       503   (`serve` without a model, or a load failed with nothing to restore)
//   Loading        503       503   (a swap: the old model is released, the new one loading)
//   Ready          200       served by the current runtime
//
// A request takes the runtime once, when it starts, and keeps it: in-flight requests finish on
// the model they started on even if a swap begins meanwhile.
//
// With expert parallelism (--world-size 2) Ready has a second condition, the worker rank being
// connected: while it is not, /health answers 503 `degraded` and generations 503
// `expert_rank_unavailable` (the engine refuses them), both retriable.
import { modelNotLoaded } from '../common/api-error.js';
import type { ModelRuntime } from '../chat/model-runtime.js';
import type { ExpertParallelStatus } from '../engine/types.js';

export type ServerState = 'starting' | 'no_model' | 'loading' | 'ready';

export class Lifecycle {
  private current: ServerState;
  private live: ModelRuntime | null = null;
  /** Requests holding a runtime (taken in require(), given back by release()). */
  private inFlight = 0;
  private onDrained: (() => void)[] = [];

  constructor(
    initial: 'starting' | 'no_model' = 'starting',
    /** --world-size: 1, or 2 for expert parallelism (this process is the head). */
    readonly worldSize = 1,
  ) {
    this.current = initial;
  }

  /**
   * Expert parallelism's state: the loaded engine's view of its peer, or "waiting" while the model
   * (and the wait for rank 1) is still loading; null on one rank.
   */
  expertParallel(): Pick<ExpertParallelStatus, 'worldSize' | 'rank' | 'peers'> | ExpertParallelStatus | null {
    if (this.worldSize <= 1) return null;
    return this.live?.engine.expertParallel?.() ?? { worldSize: this.worldSize, rank: 0, peers: 'waiting' };
  }

  get state(): ServerState {
    return this.current;
  }

  /** The runtime of the Ready state, or null. */
  get runtime(): ModelRuntime | null {
    return this.live;
  }

  setReady(runtime: ModelRuntime): void {
    this.live = runtime;
    this.current = 'ready';
  }

  /** A swap began: new requests get 503 until setReady (new model) or setReady(old) (restored). */
  setLoading(): void {
    this.live = null;
    this.current = 'loading';
  }

  setNoModel(): void {
    this.live = null;
    this.current = 'no_model';
  }

  /** The runtime for a request that needs a model (held until `release`); 503 model_not_loaded otherwise. */
  require(): ModelRuntime {
    if (this.current !== 'ready' || this.live === null) throw modelNotLoaded(this.current);
    this.inFlight += 1;
    return this.live;
  }

  /** A request that took a runtime with require() has ended. */
  release(): void {
    this.inFlight -= 1;
    if (this.inFlight === 0) for (const resolve of this.onDrained.splice(0)) resolve();
  }

  /** Resolves once no request holds a runtime (a swap waits for it after setLoading: none can start meanwhile). */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.onDrained.push(resolve));
  }
}
