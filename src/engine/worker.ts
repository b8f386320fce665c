// The engine worker: loads the model, sizes and allocates the KV pool, and runs the step loop
// (cancellations and timeouts → schedule → forward → per sampling row: logits processors → sample
// → postprocess: processors accept, append, stop checks → post updates).
// New jobs and cancellations arrive on the port and take effect between steps: each step is
// one macrotask, so the port's messages are delivered in between.
import { totalmem } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { defaultOps } from '../kernels/index.js';
import { loadCheckpoint } from '../model/loaders/index.js';
import { createModel } from '../model/architectures/index.js';
import { allocateKvCache, kvBytesPerToken } from './kv-cache.js';
import { describeKvPlan, kvLayerPlan } from './kv-plan.js';
import { withKvCalibration } from './kv-calibration.js';
import { BlockManager } from './block-manager.js';
import { copyKvBlock } from './kv-blocks.js';
import { KvSwapSpace } from './kv-swap.js';
import { planKvPool } from './memory-budget.js';
import { ModelRunner } from './model-runner.js';
import { Scheduler, type ScheduledBatch } from './scheduler.js';
import { SlaiPolicy } from './slo-policy.js';
import { StepTimeModel, stepShape } from './step-time-model.js';
import { createSequence, type Sequence } from './sequence.js';
import { logprobsFor, sampleToken } from './sampler.js';
import { compileGrammar, loadVocabIndex, type ToolGrammar, type VocabIndex } from './grammar/index.js';
import { changesLogits, forcedToken, logitsProcessors, processLogits } from './logits/index.js';
import type { GenerationRequest } from './types.js';
import type { LoadProgress, Tensor } from '../model/types.js';
import type { EngineFinishReason } from './types.js';
import type { EngineInfo, EngineOptions, FromWorker, JobUpdate, ToWorker, WorkerStats } from './messages.js';

const port = parentPort!;
const post = (msg: FromWorker) => port.postMessage(msg);
/** Least time between two load-progress messages. */
const PROGRESS_MS = 250;

class StepLoop {
  private readonly seqs = new Map<number, Sequence>();
  private readonly cancels = new Set<number>();
  /** Jobs refused on arrival (a grammar that would not compile): ended with 'error' at the next step. */
  private readonly refused = new Map<number, string>();
  private stepQueued = false;
  /** The main thread's tokenizer, packed (packTokenizer): what the vocabulary is worked out from. */
  private tokenizer: Uint8Array | null = null;
  /**
   * Token bytes of the vocabulary for grammar masks: loaded in a background thread when the first
   * constrained job arrives; such jobs wait outside the scheduler until it is there.
   */
  private vocab: VocabIndex | null = null;
  private vocabLoading = false;
  private readonly awaitingVocab: { seq: Sequence; req: GenerationRequest }[] = [];
  /** Scratch rows, one logits row long: grammar masks, and the raw row kept for log-probabilities. */
  private mask: Uint8Array | null = null;
  private raw: Float32Array | null = null;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly runner: ModelRunner,
    private readonly blocks: BlockManager,
    /** Fed every step's measured time; slai sizes prefill from it. */
    private readonly stepTime: StepTimeModel,
    private readonly slai: SlaiPolicy | null,
  ) {}

  receive(msg: ToWorker): void {
    if (msg.type === 'tokenizer') {
      this.tokenizer = msg.packed;
      return;
    }
    if (msg.type === 'submit') {
      const seq = createSequence(msg.id, msg.req, msg.submittedAt);
      this.seqs.set(seq.id, seq);
      if (msg.req.constraint && this.vocab === null) {
        this.awaitingVocab.push({ seq, req: msg.req });
        this.startVocabLoad();
      } else {
        this.admit(seq, msg.req);
      }
    } else if (this.seqs.has(msg.id)) {
      this.cancels.add(msg.id);
    }
    this.queueStep();
  }

  /** Into the scheduler, with its logits processors (its grammar constraint compiled: the vocabulary is loaded by now). */
  private admit(seq: Sequence, req: GenerationRequest): void {
    let grammar: ToolGrammar | null = null;
    if (req.constraint) {
      try {
        grammar = compileGrammar(req.constraint, this.vocab!);
      } catch (err) {
        this.refused.set(seq.id, `tool-call grammar failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    seq.processors = logitsProcessors(req, grammar, () => (this.mask ??= new Uint8Array(this.runner.vocabSize)));
    this.scheduler.add(seq);
  }

  private startVocabLoad(): void {
    if (this.vocabLoading) return;
    this.vocabLoading = true;
    const waiting = () => this.awaitingVocab.splice(0).filter(({ seq }) => this.seqs.has(seq.id));
    const loading = this.tokenizer
      ? loadVocabIndex(this.tokenizer)
      : Promise.reject(new Error('the engine was given no tokenizer (RunningEngine.setTokenizer)'));
    loading.then(
      (vocab) => {
        this.vocab = vocab;
        this.tokenizer = null; // needed no more
        for (const { seq, req } of waiting()) this.admit(seq, req);
        this.queueStep();
      },
      (err: unknown) => {
        this.vocabLoading = false;
        const message = `tool-call grammar failed: cannot read the vocabulary: ${err instanceof Error ? err.message : String(err)}`;
        for (const { seq } of waiting()) {
          this.refused.set(seq.id, message);
          this.scheduler.add(seq);
        }
        this.queueStep();
      },
    );
  }

  private queueStep(): void {
    if (this.stepQueued) return;
    this.stepQueued = true;
    setImmediate(() => this.step());
  }

  private step(): void {
    this.stepQueued = false;
    const updates = new Map<number, JobUpdate>();
    const update = (seq: Sequence) => {
      let u = updates.get(seq.id);
      if (!u) updates.set(seq.id, (u = { id: seq.id, ids: [] }));
      return u;
    };
    const end = (seq: Sequence, reason: EngineFinishReason, message?: string) => {
      this.scheduler.finish(seq, reason);
      this.seqs.delete(seq.id);
      update(seq).done = {
        reason,
        ...(message !== undefined ? { message } : {}),
      };
    };

    for (const [id, message] of this.refused) {
      const seq = this.seqs.get(id);
      if (seq) end(seq, 'error', message);
    }
    this.refused.clear();
    for (const id of this.cancels) {
      const seq = this.seqs.get(id);
      if (seq) end(seq, 'cancelled');
    }
    this.cancels.clear();
    const now = Date.now();
    for (const seq of this.seqs.values()) if (now >= seq.deadline) end(seq, 'timeout');

    const batch = this.scheduler.schedule();
    if (batch.chunks.length > 0) {
      try {
        const t0 = performance.now();
        this.runAndSample(batch, update, end);
        this.stepTime.observe(stepShape(batch.chunks), performance.now() - t0);
      } catch (err) {
        // A failed forward pass ends the sequences that were in it; the engine keeps serving.
        const message = `engine step failed: ${err instanceof Error ? err.message : String(err)}`;
        for (const { seq } of batch.chunks) if (seq.status !== 'finished') end(seq, 'error', message);
      }
    }

    if (updates.size > 0) post({ type: 'updates', updates: [...updates.values()], stats: this.stats() });
    // (Jobs waiting for the vocabulary are checked for timeouts whenever a step runs; the load takes seconds.)
    if (this.scheduler.hasWork()) this.queueStep();
  }

  private runAndSample(
    batch: ScheduledBatch,
    update: (seq: Sequence) => JobUpdate,
    end: (seq: Sequence, r: EngineFinishReason) => void,
  ): void {
    const logits = this.runner.run(batch);
    const vocab = this.runner.vocabSize;
    // Per sampling chunk, the tokens its sequence takes this step (its update's ids: one today).
    const taken: number[][] = [];
    for (const chunk of batch.chunks) {
      if (!chunk.sample) continue;
      const k = taken.length;
      const row = logits.subarray(k * vocab, (k + 1) * vocab);
      const seq = chunk.seq;
      const processors = seq.processors;
      // Log-probabilities are of the model's raw distribution, before processors mask it (as vLLM).
      let raw = row;
      let token = forcedToken(processors);
      if (token === null) {
        if (seq.logprobs > 0 && changesLogits(processors)) {
          raw = this.raw ??= new Float32Array(vocab);
          raw.set(row);
        }
        processLogits(processors, row);
        token = sampleToken(row, seq.sampling, seq.rng);
      }
      const u = update(seq);
      // Its first token: say how much of the prompt came from the prefix cache (usage).
      if (seq.tokens.length === seq.numPromptTokens) u.cachedTokens = seq.cachedPromptTokens ?? 0;
      u.ids.push(token);
      if (seq.logprobs > 0) (u.logprobs ??= []).push(logprobsFor(raw, token, seq.logprobs));
      taken.push(u.ids);
    }
    for (const { seq, reason, taken: n } of this.scheduler.postprocess(batch, taken)) {
      // Tokens after the one that ended it are not reported.
      const u = update(seq);
      u.ids.length = n;
      if (u.logprobs) u.logprobs.length = n;
      // postprocess already released it; end() records the done event (finish is idempotent).
      end(seq, reason);
    }
  }

  stats(): WorkerStats {
    return {
      preemptions: this.scheduler.numPreemptions,
      running: this.scheduler.running.length,
      waiting: this.scheduler.waiting.length,
      kvBlocksTotal: this.blocks.numBlocks,
      kvBlocksUsed: this.blocks.usedBlocks(),
      kvPoolTokens: this.blocks.numBlocks * this.blocks.blockSize,
      kvBlocksCached: this.blocks.cachedBlocks(),
      prefixQueriedTokens: this.scheduler.prefixQueriedTokens,
      prefixHitTokens: this.scheduler.prefixHitTokens,
      swapOuts: this.scheduler.numSwapOuts,
      swapIns: this.scheduler.numSwapIns,
      stepTime: {
        steps: this.stepTime.steps,
        costs: this.stepTime.costs(),
        margin: this.stepTime.margin,
        slaiDeferred: this.slai?.numDeferred ?? 0,
        slaiLimited: this.slai?.numLimited ?? 0,
      },
    };
  }
}

function start(options: EngineOptions): void {
  const t0 = performance.now();
  let loop: StepLoop;
  let info: EngineInfo;
  try {
    const checkpoint = loadCheckpoint(options.modelPath, { fastLoad: options.fastLoad, onProgress: progressPoster() });
    const weightBytes = checkpoint.residency?.totalBytes ?? bufferBytes(checkpoint.tensors.values());
    const config = checkpoint.config;
    const maxSeqLen = options.maxSeqLen ?? config.maxPositionEmbeddings;
    // Per layer, K and V dtypes: --kv-cache-dtype, with --kv-high-precision-layers promoted to bf16.
    const kvDtypes = kvLayerPlan(options.kvCacheDtype, config.numLayers, options.kvHighPrecisionLayers ?? 0);
    const bytesPerToken = kvBytesPerToken(config, kvDtypes);
    const memoryBytes = options.memoryBytes ?? totalmem();
    // Size the pool before building the model, so a hopeless configuration fails fast.
    const plan = planKvPool({
      memoryBytes,
      gpuMemoryUtilization: options.gpuMemoryUtilization,
      weightBytes,
      oomGuardMb: options.oomGuardMb,
      kvBytesPerToken: bytesPerToken,
      blockSize: options.blockSize,
      maxSeqLen,
      maxNumSeqs: options.maxNumSeqs,
    });
    const calibration = options.fp8KvCalibrationTokens ?? 0;
    const ops = calibration > 0 ? withKvCalibration(defaultOps(), calibration) : defaultOps();
    const model = createModel(checkpoint, ops);
    const kv = allocateKvCache(config, plan.numBlocks, options.blockSize, kvDtypes);
    const blocks = new BlockManager(plan.numBlocks, options.blockSize, {
      prefixCaching: options.enablePrefixCaching,
      copyBlock: (from, to) => copyKvBlock(kv, from, to),
    });
    const swap = KvSwapSpace.create({ root: options.swapRoot, capacityBytes: options.swapSpaceBytes, layers: kv });
    const stepTime = new StepTimeModel();
    const slai =
      options.schedulingPolicy === 'slai'
        ? new SlaiPolicy(stepTime, { deadlineMs: options.tbtDeadlineMs ?? 100, maxPrefillTokens: options.maxPrefillTokens })
        : null;
    const scheduler = new Scheduler(
      { maxBatchSize: options.maxBatchSize, maxPrefillTokens: options.maxPrefillTokens, slai },
      blocks,
      swap.capacityBytes > 0 ? swap : null,
    );
    loop = new StepLoop(scheduler, new ModelRunner(model, kv, options.blockSize), blocks, stepTime, slai);
    info = {
      config,
      maxSeqLen,
      ops: ops.name,
      weightBytes,
      memoryBytes,
      kvCacheDtype: options.kvCacheDtype,
      kvPlan: describeKvPlan(options.kvCacheDtype, kvDtypes),
      kvBytesPerToken: bytesPerToken,
      blockSize: options.blockSize,
      kvBlocks: plan.numBlocks,
      kvPoolTokens: plan.poolTokens,
      kvPoolBytes: plan.poolBytes,
      kvPoolLimitedBy: plan.limitedBy,
      swapDirectory: swap.directory,
      loadMs: Math.round(performance.now() - t0),
    };
  } catch (err) {
    post({ type: 'load-error', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  port.on('message', (msg: ToWorker) => loop.receive(msg));
  post({ type: 'ready', info });
}

/** Tied embeddings expose one buffer under two names: count each buffer once. */
function bufferBytes(tensors: Iterable<Tensor>): number {
  const buffers = new Set<Uint8Array>();
  for (const t of tensors) buffers.add(t.data);
  let bytes = 0;
  for (const data of buffers) bytes += data.byteLength;
  return bytes;
}

/** Posts load progress to the main thread: the first and last tensor, and at most every PROGRESS_MS between. */
function progressPoster(): (p: LoadProgress) => void {
  let last = 0;
  return (p) => {
    const now = performance.now();
    if (p.tensors !== 1 && p.tensors !== p.totalTensors && now - last < PROGRESS_MS) return;
    last = now;
    post({ type: 'load-progress', progress: p });
  };
}

start(workerData as EngineOptions);
