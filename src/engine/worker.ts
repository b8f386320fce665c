// The engine worker: loads the model, sizes and allocates the KV pool, and runs the step loop
// (cancellations and timeouts → schedule → draft → forward → per sampling row: logits processors →
// sample or verify the draft token → processors accept → postprocess: append, stop checks,
// KV rollback → post updates).
// New jobs and cancellations arrive on the port and take effect between steps: each step is
// one macrotask, so the port's messages are delivered in between.
import { totalmem } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { defaultOps } from '../kernels/index.js';
import { loadCheckpoint, PackedWeightCache, type PackedCacheUse } from '../model/loaders/index.js';
import { createModel, isMoe, type ModelOptions } from '../model/architectures/index.js';
import { readEnv } from '../common/env.js';
import { HeadLink, modelIdentity } from './expert-parallel/index.js';
import { allocateKvCache, kvBytesPerToken } from './kv-cache.js';
import { describeKvPlan, kvLayerPlan } from './kv-plan.js';
import { withKvCalibration } from './kv-calibration.js';
import { BlockManager } from './block-manager.js';
import { copyKvBlock } from './kv-blocks.js';
import { KvSwapSpace } from './kv-swap.js';
import { planKvPool } from './memory-budget.js';
import { ModelRunner } from './model-runner.js';
import { createVisionEncoder } from '../model/vision/index.js';
import { recurrentStateBytesPerSlot } from '../model/architectures/recurrent-state.js';
import { StateSlots } from './state-slots.js';
import { Scheduler, type ScheduledBatch } from './scheduler.js';
import { SlaiPolicy } from './slo-policy.js';
import { StepTimeModel, stepShape } from './step-time-model.js';
import { createSequence, numCompletionTokens, type Sequence } from './sequence.js';
import { logprobsFor } from './sampler.js';
import { plainSampleToken, tokenSampler, type TokenSampler } from './adaptive-sampling.js';
import { OpProfile, timeMethod, withProfile } from './profile.js';
import { compileGrammar, loadVocabIndex, type ToolGrammar, type VocabIndex } from './grammar/index.js';
import { acceptToken, changesLogits, forcedToken, logitsProcessors, processLogits } from './logits/index.js';
import { buildDrafter, planMtp } from './speculative/index.js';
import type { Drafter } from './speculative/drafter.js';
import type { GenerationRequest } from './types.js';
import type { Checkpoint, LoadProgress, Tensor } from '../model/types.js';
import type { EngineFinishReason } from './types.js';
import type {
  EngineInfo,
  EngineOptions,
  ExpertParallelOptions,
  FromWorker,
  JobUpdate,
  ProfileRequest,
  ToWorker,
  WorkerStats,
} from './messages.js';

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
  /** The main thread's tokenizer, packed (Tokenizer.packed): what the vocabulary is worked out from. */
  private tokenizer: SharedArrayBuffer | null = null;
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
  /** Speculative decoding: tokens drafted, draft tokens taken, and verify steps (chunks with a draft), since start. */
  private draftedTokens = 0;
  private acceptedTokens = 0;
  private verifySteps = 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly runner: ModelRunner,
    private readonly blocks: BlockManager,
    /** Fed every step's measured time; slai sizes prefill from it. */
    private readonly stepTime: StepTimeModel,
    private readonly slai: SlaiPolicy | null,
    /** null = no speculative decoding. */
    private readonly drafter: Drafter | null,
    /** Draws and draft verdicts, behind --adaptive-sampling's gate when on, timed when --profile. */
    private readonly sample: TokenSampler = plainSampleToken,
  ) {}

  receive(msg: ToWorker): void {
    if (msg.type === 'tokenizer') {
      this.tokenizer = msg.packed;
      return;
    }
    if (msg.type === 'num-drafts') {
      if (this.drafter) this.scheduler.draftRoom = msg.numDrafts;
      return;
    }
    if (msg.type === 'submit') {
      const seq = createSequence(msg.id, msg.req, msg.submittedAt);
      this.seqs.set(seq.id, seq);
      const badImages = this.runner.checkImages(seq);
      if (badImages !== null) this.refused.set(seq.id, `image input: ${badImages}`);
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
      this.drafter?.forget?.(seq.id);
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
    if (this.drafter) this.draft(this.drafter, batch);
    const { logits, forward } = this.runner.run(batch);
    const vocab = this.runner.vocabSize;
    // Per sampling chunk, the tokens its sequence takes this step (its update's ids).
    const taken: number[][] = [];
    let rowIndex = 0;
    for (const chunk of batch.chunks) {
      if (!chunk.sample) continue;
      const seq = chunk.seq;
      const u = update(seq);
      // Its first token: say how much of the prompt came from the prefix cache (usage).
      if (seq.tokens.length === seq.numPromptTokens) u.cachedTokens = seq.cachedPromptTokens ?? 0;
      const ids: number[] = [];
      const draft = chunk.draft;
      // One row per draft token, then one past them: take tokens until one differs from the draft.
      for (let i = 0; i <= draft.length; i++) {
        const row = logits.subarray((rowIndex + i) * vocab, (rowIndex + i + 1) * vocab);
        const proposed = i < draft.length ? draft[i] : -1;
        const token = this.takeToken(row, seq, proposed, u);
        // The next row's processors (grammar, penalties) must have seen this token.
        acceptToken(seq.processors, token);
        ids.push(token);
        if (token !== proposed || seq.stopTokenIds.has(token) || numCompletionTokens(seq) + ids.length >= seq.maxTokens) break;
      }
      rowIndex += draft.length + 1;
      if (draft.length > 0) {
        this.verifySteps++;
        // Every token but the last agreed with the draft; the last did too when a stop ended the step there.
        const last = ids.length - 1;
        this.acceptedTokens += last + (last < draft.length && ids[last] === draft[last] ? 1 : 0);
      }
      u.ids.push(...ids);
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
    this.drafter?.observe?.({ batch, forward, hidden: this.runner.lastHidden() });
  }

  /** Asks the drafter for the decodes that have room, and puts its tokens into their chunks. */
  private draft(drafter: Drafter, batch: ScheduledBatch): void {
    const chunks = batch.chunks.filter((c) => c.room > 0);
    if (chunks.length === 0) return;
    const proposals = drafter.propose(chunks.map((c) => ({ seq: c.seq, room: c.room })));
    chunks.forEach((chunk, i) => {
      const draft = proposals[i].slice(0, chunk.room);
      chunk.draft = draft;
      chunk.length += draft.length;
      batch.numTokens += draft.length;
      this.draftedTokens += draft.length;
    });
  }

  /**
   * The token `seq` takes at one row: a processor's forced token, else one sampled from the
   * processed row — or, where a draft token was proposed (≥ 0), the verdict on it. Reports its
   * log-probability into `u` when asked.
   */
  private takeToken(row: Float32Array, seq: Sequence, proposed: number, u: JobUpdate): number {
    const processors = seq.processors;
    // Log-probabilities are of the model's raw distribution, before processors mask it (as vLLM).
    let raw = row;
    let token = forcedToken(processors);
    if (token === null) {
      if (seq.logprobs > 0 && changesLogits(processors)) {
        raw = this.raw ??= new Float32Array(row.length);
        raw.set(row);
      }
      processLogits(processors, row);
      token = this.sample(row, seq.sampling, seq.rng, proposed);
    }
    if (seq.logprobs > 0) (u.logprobs ??= []).push(logprobsFor(raw, token, seq.logprobs));
    return token;
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
      draftedTokens: this.draftedTokens,
      acceptedDraftTokens: this.acceptedTokens,
      verifySteps: this.verifySteps,
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
  const profile = options.profile ? new OpProfile() : null;
  let loop: StepLoop;
  let info: EngineInfo;
  let cache: PackedWeightCache | null = null;
  try {
    const checkpoint = loadCheckpoint(options.modelPath, {
      fastLoad: options.fastLoad,
      onProgress: progressPoster(),
      packedCache: packedCacheUse(options),
    });
    if (checkpoint.packedCache instanceof PackedWeightCache) cache = checkpoint.packedCache;
    const weightBytes = checkpoint.residency?.totalBytes ?? bufferBytes(checkpoint.tensors.values());
    const config = checkpoint.config;
    const maxSeqLen = options.maxSeqLen ?? config.maxPositionEmbeddings;
    // Per layer, K and V dtypes: --kv-cache-dtype, with --kv-high-precision-layers promoted to bf16.
    const kvDtypes = kvLayerPlan(options.kvCacheDtype, config.numLayers, options.kvHighPrecisionLayers ?? 0);
    // --speculative: checked before anything is sized; its MTP layer's KV counts in the pool.
    const mtp = options.speculative?.mode === 'mtp' ? planMtp(checkpoint, options.speculative, kvDtypes) : null;
    const bytesPerToken = kvBytesPerToken(config, kvDtypes) + (mtp?.kvBytesPerToken ?? 0);
    const memoryBytes = options.memoryBytes ?? totalmem();
    // Hybrid models: a recurrent-state slot per sequence in a batch, and the snapshots (with prefix caching).
    const stateSlotBytes = recurrentStateBytesPerSlot(config);
    const snapshotSlots = stateSlotBytes > 0 && options.enablePrefixCaching ? (options.ssmCacheSlots ?? 16) : 0;
    const stateBytes = stateSlotBytes * (options.maxBatchSize + snapshotSlots);
    if (stateSlotBytes > 0 && options.speculative) {
      throw new Error(
        `--speculative: not supported for ${config.architecture} (its recurrent state cannot roll back a rejected draft yet)`,
      );
    }
    // Size the pool before building the model, so a hopeless configuration fails fast.
    const plan = planKvPool({
      memoryBytes,
      gpuMemoryUtilization: options.gpuMemoryUtilization,
      weightBytes: weightBytes + stateBytes,
      oomGuardMb: options.oomGuardMb,
      kvBytesPerToken: bytesPerToken,
      blockSize: options.blockSize,
      maxSeqLen,
      maxNumSeqs: options.maxNumSeqs,
    });
    const calibration = options.fp8KvCalibrationTokens ?? 0;
    const calibrated = calibration > 0 ? withKvCalibration(defaultOps(), calibration) : defaultOps();
    const ops = profile ? withProfile(calibrated, profile) : calibrated;
    // --world-size 2: the link to rank 1 listens from now on, while the rest loads.
    const ep = options.expertParallel ? startExpertParallel(checkpoint, options.expertParallel) : null;
    const model = createModel(checkpoint, ops, ep?.modelOptions);
    const kv = allocateKvCache(config, plan.numBlocks, options.blockSize, kvDtypes, ops.allocateLarge);
    const spec = options.speculative;
    const built = spec
      ? buildDrafter(spec, { checkpoint, ops, model, kv, numBlocks: plan.numBlocks, blockSize: options.blockSize, mtp })
      : null;
    const drafter = built?.drafter ?? null;
    // Every layer a block holds (the MTP layer's too): copied and swapped together.
    const blockLayers = built?.kv ? [...kv, built.kv] : kv;
    const state = model.createRecurrentState?.(options.maxBatchSize + snapshotSlots) ?? null;
    const stateSlots = state ? new StateSlots(state, options.maxBatchSize, snapshotSlots) : null;
    const blocks = new BlockManager(plan.numBlocks, options.blockSize, {
      prefixCaching: options.enablePrefixCaching,
      copyBlock: (from, to) => copyKvBlock(blockLayers, from, to),
      ...(stateSlots ? { onUncached: (b: readonly number[]) => stateSlots.forget(b) } : {}),
    });
    // A preempted hybrid sequence is recomputed (its recurrent state is not swapped).
    const swap = KvSwapSpace.create({ root: options.swapRoot, capacityBytes: state ? 0 : options.swapSpaceBytes, layers: blockLayers });
    const stepTime = new StepTimeModel();
    const slai =
      options.schedulingPolicy === 'slai'
        ? new SlaiPolicy(stepTime, { deadlineMs: options.tbtDeadlineMs ?? 100, maxPrefillTokens: options.maxPrefillTokens })
        : null;
    const scheduler = new Scheduler(
      {
        maxBatchSize: options.maxBatchSize,
        maxPrefillTokens: options.maxPrefillTokens,
        slai,
        recurrent: stateSlots ? { slots: stateSlots, checkpointBlocks: options.ssmCheckpointInterval ?? 256 } : null,
      },
      blocks,
      swap.capacityBytes > 0 ? swap : null,
    );
    if (spec) scheduler.draftRoom = spec.numDrafts;
    const runner = new ModelRunner(model, kv, options.blockSize, createVisionEncoder(checkpoint, ops), state);
    const sample = tokenSampler(options.adaptiveSampling ?? false);
    if (profile) {
      timeMethod(profile, 'schedule', scheduler, 'schedule');
      timeMethod(profile, 'forward', runner, 'run');
      timeMethod(profile, 'postprocess', scheduler, 'postprocess');
      if (drafter) timeMethod(profile, 'draft', drafter, 'propose');
    }
    loop = new StepLoop(scheduler, runner, blocks, stepTime, slai, drafter, profile ? profile.timed('step', 'sample', sample) : sample);
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
      drafter: drafter?.mode ?? null,
      ...(built?.detail ? { drafterDetail: built.detail } : {}),
      packedCache: cache?.report() ?? null,
      loadMs: Math.round(performance.now() - t0),
    };
    // Ready only with rank 1 connected (its experts are half the model).
    ep?.link.waitForPeer(ep.connectTimeoutMs);
  } catch (err) {
    post({ type: 'load-error', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  port.on('message', (msg: ToWorker | ProfileRequest) => {
    if (msg.type === 'profile') post({ type: 'profile', requestId: msg.requestId, profile: profile?.snapshot() ?? null });
    else loop.receive(msg);
  });
  post({ type: 'ready', info });
  // Serving from now on: the weights packed during this load go to the cache file in the background,
  // and those mapped from it move into huge pages from a low-priority thread.
  if (cache?.needsWrite) void cache.write((path) => post({ type: 'scratch-file', path }));
  cache?.moveToHugePages();
}

/** The packed-weights cache of options, when asked for and the kernels pack into a cacheable layout. */
function packedCacheUse(options: EngineOptions): PackedCacheUse | undefined {
  const layout = defaultOps().packedLayout;
  if (!options.packedCacheDir || !options.fastLoad || !layout) return undefined;
  return {
    settings: { dir: options.packedCacheDir, format: layout.format() },
    log: (level, message) => post({ type: 'log', level, message }),
  };
}

/** The head's link to rank 1 and the model options that route half the experts over it. */
function startExpertParallel(
  checkpoint: Checkpoint,
  o: ExpertParallelOptions,
): { link: HeadLink; modelOptions: ModelOptions; connectTimeoutMs: number } {
  const { config } = checkpoint;
  if (!isMoe(checkpoint))
    throw new Error(
      `--world-size ${o.worldSize}: ${config.architecture} "${config.nameOrPath ?? checkpoint.source}" is not a mixture-of-experts model ` +
        '(its config names no routed experts); expert parallelism splits the experts of one',
    );
  const connectTimeoutMs = o.connectTimeoutMs ?? readEnv('SVC_EP_CONNECT_TIMEOUT_S') * 1000;
  const link = new HeadLink({
    worldSize: o.worldSize,
    host: o.host,
    port: o.port,
    identity: modelIdentity(checkpoint),
    control: o.control,
    events: o.events ?? null,
    replyTimeoutMs: o.replyTimeoutMs ?? readEnv('SVC_EP_REPLY_TIMEOUT_S') * 1000,
    connectTimeoutMs,
    rowsDtype: o.rowsDtype ?? readEnv('SVC_EP_ROWS_DTYPE'),
  });
  const remote = link.remoteExperts(config.numExperts!, config.hiddenSize);
  return { link, modelOptions: { experts: { shard: { rank: 0, worldSize: o.worldSize }, remote } }, connectTimeoutMs };
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
