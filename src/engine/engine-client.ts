// The main thread's face of the engine: starts the worker, admits or refuses jobs, forwards them
// and turns the worker's per-step updates into each job's event stream. No model math here.
import { rmSync } from 'node:fs';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { Tokenizer } from '../model/tokenizer.js';
import type { LoadProgress } from '../model/types.js';
import {
  EngineAdmissionError,
  type Engine,
  type EngineEvent,
  type ExpertParallelStatus,
  type GenerationHandle,
  type GenerationRequest,
} from './types.js';
import { CONTROL_BYTES, readStatus } from './expert-parallel/control.js';
import type { LinkEvent } from './expert-parallel/link-thread.js';
import type { EngineInfo, EngineOptions, FromWorker, JobUpdate, ProfileRequest, ToWorker, WorkerStats } from './messages.js';
import type { ProfileSnapshot } from './profile.js';

export type { EngineInfo, EngineOptions, ExpertParallelOptions, WorkerStats } from './messages.js';
export type { LinkEvent } from './expert-parallel/link-thread.js';

/** A line for the server's log from the engine's side: the expert-parallel link's, the worker's (packed-weights cache). */
export interface EngineLogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
}

export interface RunningEngine extends Engine {
  /** Model config and KV pool size, for the start-up log. */
  readonly info: EngineInfo;
  stats(): WorkerStats;
  /**
   * Hands the engine the main thread's tokenizer of its model, once, before jobs with a tool
   * grammar (they fail without it): the grammars' vocabulary is worked out from it, in a
   * background thread, when the first such job arrives, so no tokenizer file is read twice.
   */
  setTokenizer(tokenizer: Tokenizer): void;
  /** Draft tokens per verify step from now on (MODEL.toml's default_num_drafts); no effect without a drafter. */
  setNumDrafts(numDrafts: number): void;
  /** --profile's timing table, fetched from the worker between steps; null when started without it. */
  profile(): Promise<ProfileSnapshot | null>;
}

/** The main thread's end of the expert-parallel link (--world-size 2): its shared words and its log lines. */
interface ExpertParallelSide {
  control: SharedArrayBuffer;
  worldSize: number;
  endpoint: string;
  events: MessagePort;
}

/**
 * Starts the worker and resolves once the model is loaded; rejects with the worker's load error.
 * onProgress hears how far the load has got (a few times a second at most). Aborting `signal`
 * stops a load in progress (the worker is terminated and the promise rejects). onLog hears the
 * engine's log lines for the engine's whole life: the packed-weights cache's (a file ignored,
 * written, not writable) and, with expert parallelism, the link's (waiting for rank 1, connected,
 * lost), from the start of the load on; the engine is ready only once rank 1 has connected.
 */
export function startEngine(
  options: EngineOptions,
  onProgress?: (p: LoadProgress) => void,
  signal?: AbortSignal,
  onLog?: (e: EngineLogLine) => void,
): Promise<RunningEngine> {
  checkOptions(options);
  let ep: ExpertParallelSide | null = null;
  let workerData = options;
  const transferList: MessagePort[] = [];
  if (options.expertParallel) {
    const { worldSize, host, port } = options.expertParallel;
    const control = new SharedArrayBuffer(CONTROL_BYTES);
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (e: LinkEvent) => onLog?.(e));
    port1.unref();
    ep = { control, worldSize, endpoint: `${host}:${port}`, events: port1 };
    workerData = { ...options, expertParallel: { ...options.expertParallel, control, events: port2 } };
    transferList.push(port2);
  }
  const side = ep;
  const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData, transferList });
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      detach();
      side?.events.close();
      void worker.terminate();
      reject(new Error('model load aborted'));
    };
    const onMessage = (msg: FromWorker) => {
      if (msg.type === 'load-progress') {
        onProgress?.(msg.progress);
      } else if (msg.type === 'log') {
        onLog?.(msg);
      } else if (msg.type === 'ready') {
        detach();
        resolve(new EngineClient(worker, msg.info, options, side, onLog));
      } else if (msg.type === 'load-error') {
        detach();
        side?.events.close();
        void worker.terminate();
        reject(new Error(msg.message));
      }
    };
    const onError = (err: Error) => {
      detach();
      side?.events.close();
      void worker.terminate();
      reject(err);
    };
    const onExit = (code: number) => {
      detach();
      side?.events.close();
      reject(new Error(`engine worker exited during start-up (exit code ${code})`));
    };
    const detach = () => {
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort);
  });
}

function checkOptions(o: EngineOptions): void {
  const positiveInts = {
    // Unset: the model's own context length, known once the worker has read the config.
    ...(o.maxSeqLen === undefined ? {} : { maxSeqLen: o.maxSeqLen }),
    maxBatchSize: o.maxBatchSize,
    maxPrefillTokens: o.maxPrefillTokens,
    maxNumSeqs: o.maxNumSeqs,
    blockSize: o.blockSize,
  };
  for (const [name, v] of Object.entries(positiveInts)) {
    if (!Number.isInteger(v) || v <= 0) throw new RangeError(`engine option ${name} must be a positive integer, got ${v}`);
  }
  if (!(o.gpuMemoryUtilization > 0 && o.gpuMemoryUtilization <= 1)) {
    throw new RangeError(`--gpu-memory-utilization must be in (0, 1], got ${o.gpuMemoryUtilization}`);
  }
  if (!(o.oomGuardMb >= 0)) throw new RangeError(`--oom-guard-mb must be ≥ 0, got ${o.oomGuardMb}`);
  if (o.expertParallel && o.expertParallel.worldSize !== 2)
    throw new RangeError(`expert parallelism runs on 2 ranks, got --world-size ${o.expertParallel.worldSize}`);
}

class EngineClient implements RunningEngine {
  private nextId = 1;
  /** Jobs queued or running in the worker (admission counts these). */
  private readonly jobs = new Map<number, EventQueue>();
  private readonly cancelled = new Set<number>();
  /** Profile requests awaiting the worker's answer, by request id. */
  private readonly profileWaiters = new Map<number, { resolve: (p: ProfileSnapshot | null) => void; reject: (err: Error) => void }>();
  private nextProfileRequest = 1;
  private snapshot: WorkerStats;
  /** Why the engine can take no more work (worker died, shut down); null while healthy. */
  private down: string | null = null;

  get maxSequences(): number {
    return this.options.maxNumSeqs;
  }

  constructor(
    private readonly worker: Worker,
    readonly info: EngineInfo,
    private readonly options: EngineOptions,
    /** --world-size 2: the link's shared words and log port; null on one rank. */
    private readonly ep: ExpertParallelSide | null = null,
    private readonly onLog?: (e: EngineLogLine) => void,
  ) {
    this.snapshot = {
      running: 0,
      waiting: 0,
      kvBlocksTotal: info.kvBlocks,
      kvBlocksUsed: 0,
      kvPoolTokens: info.kvPoolTokens,
      kvBlocksCached: 0,
      prefixQueriedTokens: 0,
      prefixHitTokens: 0,
      draftedTokens: 0,
      acceptedDraftTokens: 0,
      verifySteps: 0,
      preemptions: 0,
      swapOuts: 0,
      swapIns: 0,
    };
    worker.on('message', (msg: FromWorker) => {
      if (msg.type === 'updates') this.apply(msg.updates, msg.stats);
      else if (msg.type === 'log') this.onLog?.(msg);
      else if (msg.type === 'scratch-file') this.scratchFile = msg.path;
      else if (msg.type === 'profile') {
        this.profileWaiters.get(msg.requestId)?.resolve(msg.profile);
        this.profileWaiters.delete(msg.requestId);
      }
    });
    worker.on('error', (err) => this.fail(`engine worker crashed: ${err.message}`));
    worker.on('exit', (code) => {
      this.fail(`engine worker exited (exit code ${code})`);
      this.removeSwap();
      this.removeScratch();
    });
    // Also when the process ends without shutting the engine down (an uncaught error, a write to a
    // closed pipe during shutdown): only a SIGKILL leaves the directory behind.
    if (info.swapDirectory !== null) process.once('exit', this.removeSwap);
  }

  /** A file the worker was writing when it ended (a packed-weights cache file before its rename). */
  private scratchFile: string | null = null;

  private removeScratch(): void {
    if (this.scratchFile !== null) rmSync(this.scratchFile, { force: true });
    this.scratchFile = null;
  }

  /** A terminated worker runs no exit hooks: its swap files are removed from here. */
  private readonly removeSwap = (): void => {
    if (this.info.swapDirectory === null) return;
    process.off('exit', this.removeSwap);
    rmSync(this.info.swapDirectory, { recursive: true, force: true });
  };

  submit(req: GenerationRequest): GenerationHandle {
    if (this.down !== null) throw new EngineAdmissionError('not_ready', this.down);
    const ep = this.expertParallel();
    if (ep !== null && ep.peers !== 'connected')
      throw new EngineAdmissionError(
        'peer_unavailable',
        `expert-parallel rank 1 of ${ep.worldSize} ${ep.peers === 'lost' ? 'was lost' : 'is not connected'}; the head waits for it on ${ep.endpoint}`,
      );
    if (req.promptTokens.length === 0) throw new RangeError('the prompt has no tokens');
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1)
      throw new RangeError(`maxTokens must be a positive integer, got ${req.maxTokens}`);
    const total = req.promptTokens.length + req.maxTokens;
    if (total > this.info.maxSeqLen) {
      throw new EngineAdmissionError(
        'too_long',
        `prompt (${req.promptTokens.length} tokens) + max_tokens (${req.maxTokens}) = ${total} tokens exceeds the context length ${this.info.maxSeqLen}`,
      );
    }
    if (this.jobs.size >= this.options.maxNumSeqs) {
      throw new EngineAdmissionError(
        'queue_full',
        `the engine is full: ${this.jobs.size} sequences queued or running (--max-num-seqs ${this.options.maxNumSeqs})`,
      );
    }
    const id = this.nextId++;
    const cancel = () => this.cancel(id);
    const queue = new EventQueue(cancel);
    this.jobs.set(id, queue);
    this.send({ type: 'submit', id, req, submittedAt: Date.now() });
    return { events: queue, cancel };
  }

  setTokenizer(tokenizer: Tokenizer): void {
    if (this.down !== null) return;
    this.worker.postMessage({ type: 'tokenizer', packed: tokenizer.packed } satisfies ToWorker);
  }

  setNumDrafts(numDrafts: number): void {
    if (this.down !== null) return;
    this.worker.postMessage({ type: 'num-drafts', numDrafts } satisfies ToWorker);
  }

  profile(): Promise<ProfileSnapshot | null> {
    if (!this.options.profile) return Promise.resolve(null);
    if (this.down !== null) return Promise.reject(new Error(this.down));
    const requestId = this.nextProfileRequest++;
    return new Promise((resolve, reject) => {
      this.profileWaiters.set(requestId, { resolve, reject });
      this.worker.postMessage({ type: 'profile', requestId } satisfies ProfileRequest);
    });
  }

  expertParallel(): ExpertParallelStatus | null {
    return this.ep === null ? null : readStatus(this.ep.control, this.ep.worldSize, this.ep.endpoint);
  }

  stats(): WorkerStats {
    // Jobs the worker has not reported as running (including ones it has not seen yet) are waiting.
    return { ...this.snapshot, waiting: Math.max(0, this.jobs.size - this.snapshot.running) };
  }

  async shutdown(): Promise<void> {
    this.fail('the engine was shut down', 'cancelled');
    this.ep?.events.close();
    await this.worker.terminate();
    this.removeSwap();
    this.removeScratch();
  }

  private cancel(id: number): void {
    if (!this.jobs.has(id) || this.cancelled.has(id)) return;
    this.cancelled.add(id);
    this.send({ type: 'cancel', id });
  }

  private send(msg: ToWorker): void {
    this.worker.postMessage(msg);
  }

  private apply(updates: JobUpdate[], stats: WorkerStats): void {
    this.snapshot = stats;
    for (const u of updates) {
      const queue = this.jobs.get(u.id);
      if (!queue) continue;
      if (u.ids.length > 0)
        queue.push({
          type: 'tokens',
          ids: u.ids,
          ...(u.logprobs ? { logprobs: u.logprobs } : {}),
          ...(u.cachedTokens !== undefined ? { cachedTokens: u.cachedTokens } : {}),
        });
      if (u.done) {
        queue.push({ type: 'done', ...u.done });
        queue.end();
        this.jobs.delete(u.id);
        this.cancelled.delete(u.id);
      }
    }
  }

  /** Ends every open job (the worker is gone) and refuses new ones. */
  private fail(message: string, reason: 'error' | 'cancelled' = 'error'): void {
    if (this.down !== null) return;
    this.down = message;
    for (const queue of this.jobs.values()) {
      queue.push({ type: 'done', reason, message });
      queue.end();
    }
    this.jobs.clear();
    this.cancelled.clear();
    for (const waiter of this.profileWaiters.values()) waiter.reject(new Error(message));
    this.profileWaiters.clear();
    this.snapshot = { ...this.snapshot, running: 0, waiting: 0, kvBlocksUsed: 0 };
  }
}

/**
 * One job's events as an async iterable. Leaving a `for await` early (break, throw) cancels the
 * job, so an abandoned stream never holds KV blocks.
 */
class EventQueue implements AsyncIterable<EngineEvent> {
  private readonly items: EngineEvent[] = [];
  private waiter: ((r: IteratorResult<EngineEvent>) => void) | null = null;
  private ended = false;

  constructor(private readonly onAbandon: () => void) {}

  push(ev: EngineEvent): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: ev, done: false });
    } else {
      this.items.push(ev);
    }
  }

  end(): void {
    this.ended = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<EngineEvent> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiter = resolve));
      },
      return: () => {
        if (!this.ended) this.onAbandon();
        this.items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
