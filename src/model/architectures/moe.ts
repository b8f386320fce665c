// The routed-experts feed-forward block of a mixture-of-experts layer (Qwen3-MoE, Mixtral), as
// transformers and llama.cpp run it: router matmul → softmax over the experts → the top k (ties to
// the lower expert id, as torch.topk) → optionally renormalised to sum to 1 → the weighted sum of
// those experts' SwiGLU FFNs (ops.moe). With expert parallelism this process holds a contiguous
// share of the experts; the rows' routes go to the ranks holding the rest (RemoteExperts) while the
// local share is computed, and their sum is added after.
import type { MoeExperts, Ops, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import { expertRange, type ExpertShard, type ModelOptions, type RemoteExperts } from './expert-placement.js';
import { expertShape, loadLayerExperts, loadRouter, loadSharedExpert, type SharedExpert } from './expert-weights.js';
import { CheckpointWeights } from './weights.js';

/** Routing buffers sized for the largest batch seen so far, shared by every MoE layer of a model. */
export class MoeScratch {
  capacity = 0;
  /** [rows, numExperts]: the router's logits. */
  logits = new Float32Array(0);
  /** [rows, k]: each row's experts, best first. */
  ids = new Int32Array(0);
  /** [rows, k]: their routing weights. */
  weights = new Float32Array(0);
  /** A shared expert's activations [rows, sharedWidth] (gate, up) and output [rows, hidden]; empty without one. */
  sharedGate = new Float32Array(0);
  sharedUp = new Float32Array(0);
  sharedOut = new Float32Array(0);

  constructor(
    private readonly numExperts: number,
    private readonly k: number,
    /** A shared expert's width and the hidden size (GraniteMoeShared); 0: none. */
    private readonly sharedWidth = 0,
    private readonly hidden = 0,
  ) {}

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    this.logits = new Float32Array(rows * this.numExperts);
    this.ids = new Int32Array(rows * this.k);
    this.weights = new Float32Array(rows * this.k);
    if (this.sharedWidth > 0) {
      this.sharedGate = new Float32Array(rows * this.sharedWidth);
      this.sharedUp = new Float32Array(rows * this.sharedWidth);
      this.sharedOut = new Float32Array(rows * this.hidden);
    }
    this.capacity = rows;
  }
}

/**
 * For each of n rows of router logits [n, numExperts]: the k experts of highest softmax probability
 * into ids [n, k] (best first; equal probabilities go to the lower id, as torch.topk) and their
 * probabilities into weights, renormalised over the k when `normalize`. Softmax is monotonic, so
 * the choice is made on the logits; the probabilities are computed in f64.
 */
export function routeTopK(
  logits: Float32Array,
  n: number,
  numExperts: number,
  k: number,
  normalize: boolean,
  ids: Int32Array,
  weights: Float32Array,
): void {
  for (let i = 0; i < n; i++) {
    const base = i * numExperts;
    let max = -Infinity;
    for (let e = 0; e < numExperts; e++) if (logits[base + e] > max) max = logits[base + e];
    let sum = 0;
    for (let e = 0; e < numExperts; e++) sum += Math.exp(logits[base + e] - max);
    // The j-th pick is the best of the experts ranked after the (j-1)-th: lower logit, or the same logit and a higher id.
    let prevValue = Infinity;
    let prevId = -1;
    let picked = 0;
    for (let j = 0; j < k; j++) {
      let best = -1;
      let bestValue = -Infinity;
      for (let e = 0; e < numExperts; e++) {
        const v = logits[base + e];
        if (!(v < prevValue || (v === prevValue && e > prevId))) continue;
        if (best < 0 || v > bestValue) {
          best = e;
          bestValue = v;
        }
      }
      if (best < 0) throw new Error(`moe routing: row ${i} has fewer than ${k} experts with finite logits`);
      const p = Math.exp(bestValue - max) / sum;
      ids[i * k + j] = best;
      weights[i * k + j] = p;
      picked += p;
      prevValue = bestValue;
      prevId = best;
    }
    if (normalize) for (let j = 0; j < k; j++) weights[i * k + j] /= picked;
  }
}

/** DeepSeek-V2's routing beyond routeTopK (ModelConfig.moeRouting). */
export interface MoeRouting {
  /** Weights multiplied by this (routed_scaling_factor) when they are not renormalised. */
  readonly scale: number;
  /** group_limited_greedy: the experts split into numGroups equal groups; only the topkGroups best groups compete. */
  readonly groups?: { readonly numGroups: number; readonly topkGroups: number };
}

/**
 * DeepSeek-V2's gate (its reference modeling code, MoEGate): softmax over the router logits (f64
 * here); with `groups`, each group scores its largest probability and only the experts of the
 * topkGroups best groups (ties to the lower group) may be picked; the k most probable of those
 * (ties to the lower id) into ids [n, k], best first, their probabilities into weights —
 * renormalised over the k (+ 1e-20) when `normalize`, else multiplied by routing.scale.
 */
export function routeDeepseek(
  logits: Float32Array,
  n: number,
  numExperts: number,
  k: number,
  normalize: boolean,
  routing: MoeRouting,
  ids: Int32Array,
  weights: Float32Array,
): void {
  const probs = new Float64Array(numExperts);
  const allowed = new Uint8Array(numExperts);
  const g = routing.groups;
  if (g && (numExperts % g.numGroups !== 0 || g.topkGroups < 1 || g.topkGroups > g.numGroups))
    throw new RangeError(`moe routing: ${numExperts} experts in ${g.numGroups} groups, top ${g.topkGroups} groups`);
  const perGroup = g ? numExperts / g.numGroups : numExperts;
  const groupScore = new Float64Array(g ? g.numGroups : 0);
  for (let i = 0; i < n; i++) {
    const base = i * numExperts;
    let max = -Infinity;
    for (let e = 0; e < numExperts; e++) max = Math.max(max, logits[base + e]);
    let sum = 0;
    for (let e = 0; e < numExperts; e++) sum += probs[e] = Math.exp(logits[base + e] - max);
    for (let e = 0; e < numExperts; e++) probs[e] /= sum;
    allowed.fill(g ? 0 : 1);
    if (g) {
      groupScore.fill(-Infinity);
      for (let e = 0; e < numExperts; e++) {
        const grp = Math.floor(e / perGroup);
        groupScore[grp] = Math.max(groupScore[grp], probs[e]);
      }
      for (let pick = 0; pick < g.topkGroups; pick++) {
        let best = 0;
        for (let grp = 1; grp < g.numGroups; grp++) if (groupScore[grp] > groupScore[best]) best = grp;
        allowed.fill(1, best * perGroup, (best + 1) * perGroup);
        groupScore[best] = -Infinity;
      }
    }
    let picked = 0;
    for (let j = 0; j < k; j++) {
      let best = -1;
      for (let e = 0; e < numExperts; e++) if (allowed[e] && (best < 0 || probs[e] > probs[best])) best = e;
      if (best < 0) throw new Error(`moe routing: row ${i} has fewer than ${k} experts in its groups`);
      allowed[best] = 0;
      ids[i * k + j] = best;
      weights[i * k + j] = probs[best];
      picked += probs[best];
    }
    for (let j = 0; j < k; j++) weights[i * k + j] = normalize ? weights[i * k + j] / (picked + 1e-20) : weights[i * k + j] * routing.scale;
  }
}

/** One layer's routed experts: the router and the experts this process holds (the others null). */
export class MoeBlock {
  readonly kind = 'moe';
  private readonly holdsAny: boolean;

  constructor(
    /** Its layer index in the model (RemoteExperts.start's `layer`). */
    readonly layer: number,
    readonly router: WeightMatrix,
    readonly experts: MoeExperts,
    private readonly k: number,
    private readonly normalize: boolean,
    private readonly remote: RemoteExperts | null,
    /** A shared expert run on every row and added to the routed output (GraniteMoeShared); null: none. */
    readonly shared: SharedExpert | null = null,
    /** The router's bias [numExperts] (GPT-OSS); null: none. */
    readonly routerBias: Float32Array | null = null,
    /** DeepSeek-V2's routing (routeDeepseek); absent: routeTopK. */
    private readonly routing?: MoeRouting,
  ) {
    this.holdsAny = experts.gate.some((g) => g !== null);
  }

  /**
   * out[0, n·hidden) = the block's output for the n rows of x (the post-attention-normed hidden
   * states). s must hold n rows (s.ensure); its logits, ids and weights hold this call's routing after.
   */
  run(ops: Ops, x: Float32Array, n: number, out: Float32Array, s: MoeScratch): void {
    const numExperts = this.router.rows;
    if (this.routerBias) ops.matmul(x, n, this.router, s.logits, this.routerBias);
    else ops.matmul(x, n, this.router, s.logits);
    if (this.routing) routeDeepseek(s.logits, n, numExperts, this.k, this.normalize, this.routing, s.ids, s.weights);
    else routeTopK(s.logits, n, numExperts, this.k, this.normalize, s.ids, s.weights);
    this.remote?.start(this.layer, x, n, s.ids, s.weights, this.k);
    if (this.holdsAny) ops.moe(x, n, this.experts, s.ids, s.weights, this.k, out);
    else out.fill(0, 0, n * this.router.cols);
    this.remote?.finish(out, n);
    const sh = this.shared;
    if (sh) {
      const width = sh.gate.rows;
      if (s.sharedGate.length < n * width) throw new Error('moe: a shared expert run with scratch that has no room for it');
      ops.matmul(x, n, sh.gate, s.sharedGate);
      ops.matmul(x, n, sh.up, s.sharedUp);
      ops.siluMul(s.sharedGate, s.sharedUp, s.sharedGate, n * width);
      ops.matmul(s.sharedGate, n, sh.down, s.sharedOut);
      ops.add(out, s.sharedOut, out, n * sh.down.rows);
    }
  }
}

/**
 * The MoE block of layer `layer` (tensors under `prefix`): every expert, or the share `placement` gives
 * this process; with GraniteMoeShared's ungated shared expert when the config has one, unless the
 * family runs its shared expert itself (`ownSharedExpert`: Qwen3.5-MoE's gated one).
 */
export function loadMoeBlock(
  w: CheckpointWeights,
  c: ModelConfig,
  layer: number,
  prefix: string,
  placement?: ModelOptions['experts'],
  ownSharedExpert = false,
): MoeBlock {
  const s = expertShape(c);
  const range = placement ? expertRange(s.numExperts, placement.shard) : ([0, s.numExperts] as const);
  const router = loadRouter(w, c, prefix);
  const experts = loadLayerExperts(w, c, prefix, range);
  const shared = ownSharedExpert ? null : loadSharedExpert(w, c, prefix);
  return new MoeBlock(layer, router, experts, s.perToken, c.normTopkProb ?? false, placement?.remote ?? null, shared);
}

/**
 * The experts `shard` holds, per layer (null for a dense layer), and nothing else of the
 * checkpoint: what an expert-parallel rank that runs only experts loads. Another rank's experts
 * are null and never read; from a mapped checkpoint only the shard's pages stay (GGUF: the loader
 * is told every other tensor is left alone, so what it read ahead is released; safetensors must be
 * loaded without fast load for this, as fast load reads whole files).
 */
export function loadExpertShard(checkpoint: Checkpoint, ops: Ops, shard: ExpertShard): (MoeExperts | null)[] {
  const c = checkpoint.config;
  const { numExperts } = expertShape(c);
  const range = expertRange(numExperts, shard);
  const w = new CheckpointWeights(checkpoint, ops);
  const layers: (MoeExperts | null)[] = [];
  for (let l = 0; l < c.numLayers; l++) layers.push(c.moeLayers?.[l] ? loadLayerExperts(w, c, `model.layers.${l}.`, range) : null);
  w.skipTheRest();
  return layers;
}
