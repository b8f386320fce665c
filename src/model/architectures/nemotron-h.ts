// Nemotron-H (NemotronHForCausalLM, model_type nemotron_h) and the model class Mamba2 shares with it
// (mamba2.ts): a stack of blocks, each `hidden += mixer(RMSNorm(hidden))` with its own norm, whose
// mixer is one of (config hybrid_override_pattern, or layers_block_type / layer_types)
//   M  a Mamba2 mixer (mamba2-mixer.ts; per-sequence recurrent state),
//   *  attention: q/k/v/o without biases, grouped-query, no RoPE (transformers' NemotronHAttention
//      applies none), over the paged KV cache,
//   -  an MLP: down(relu(up · x)²), no gate,
//   E  MoE: a sigmoid router with e_score_correction_bias choosing top-k among the best topk_group of
//      n_group groups, weights renormalised (norm_topk_prob) and scaled by routed_scaling_factor, over
//      ungated relu² experts, plus a shared relu² MLP.
// then norm_f and lm_head. Only attention blocks hold KV (ModelConfig.layerTypes, usesKvCache); Mamba
// blocks keep a RecurrentState slot per sequence (ForwardBatch.stateSlots), created here.
// GGUF (llama.cpp 'nemotron_h' / 'nemotron_h_moe', conversion/nemotron.py NemotronHModel over GraniteHybridModel
// and Mamba2Model): ggufNemotronHConfig derives the block pattern as llama.cpp does from the per-layer arrays
// (head_count_kv > 0: attention; feed_forward_length > 0: MLP, or MoE in a file with experts; both 0: Mamba2),
// and reads the SSM and MoE keys; tensor names and the Mamba reversals are loaders/gguf-names.ts's. The
// converter interleaves attention Q/K rows (LlamaModel.permute via GraniteMoeModel), which without RoPE
// changes no score, so nothing is undone. What a file cannot carry: a dense MLP block beside MoE blocks
// (the converter writes feed_forward_length 0 there, which llama.cpp reads as a Mamba2 block: refused, as
// the tensors do not match), and time_step_min (llama.cpp does not clamp dt: dtMin 0).
import type { KvLayer, Ops, RecurrentSeq, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, LayerType, ModelConfig, SigmoidRoutingConfig, SsmConfig } from '../types.js';
import type { ArchitectureModule, ForwardBatch, ForwardOptions, GgufConfigReader, Model, OutputHead, RecurrentState } from './model.js';
import type { DecoderOptions } from './decoder-layer.js';
import { CheckpointWeights } from './weights.js';
import { MambaState } from './mamba-state.js';
import { ggufSsmConfig, loadMamba2Mixer, Mamba2Scratch, runMamba2Mixer, type Mamba2MixerWeights } from './mamba2-mixer.js';
import { bf16OutputHead, selectedRowLogits } from './output-head.js';

type Json = Readonly<Record<string, unknown>>;

/** relu(x)², transformers' relu2 (ACT2FN["relu2"]). */
function relu2InPlace(x: Float32Array, len: number): void {
  for (let i = 0; i < len; i++) {
    const v = x[i] > 0 ? x[i] : 0;
    x[i] = v * v;
  }
}

interface Relu2Mlp {
  up: WeightMatrix;
  down: WeightMatrix;
  upBias?: Float32Array;
  downBias?: Float32Array;
}

interface AttentionWeights {
  q: WeightMatrix;
  k: WeightMatrix;
  v: WeightMatrix;
  o: WeightMatrix;
}

interface MoeWeights {
  router: WeightMatrix;
  correction: Float32Array;
  /** Per expert (ungated relu² FFN). */
  up: WeightMatrix[];
  down: WeightMatrix[];
  shared: Relu2Mlp | null;
}

interface Block {
  type: LayerType;
  norm: Float32Array;
  mamba: Mamba2MixerWeights | null;
  attention: AttentionWeights | null;
  mlp: Relu2Mlp | null;
  moe: MoeWeights | null;
}

/** Where a family keeps its tensors (`model.`; Mamba2's `backbone.` is renamed so by the loader). */
export interface SsmModelNames {
  prefix: string;
}

class Scratch {
  capacity = 0;
  hidden = new Float32Array(0);
  normed = new Float32Array(0);
  proj = new Float32Array(0);
  q = new Float32Array(0);
  k = new Float32Array(0);
  v = new Float32Array(0);
  attn = new Float32Array(0);
  ff = new Float32Array(0);
  ffOut = new Float32Array(0);
  gx = new Float32Array(0);
  logits = new Float32Array(0);
  ids = new Int32Array(0);
  weights = new Float32Array(0);

  constructor(
    private readonly c: ModelConfig,
    private readonly ffWidth: number,
  ) {}

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const c = this.c;
    const r = c.sigmoidRouting;
    this.hidden = new Float32Array(cap * c.hiddenSize);
    this.normed = new Float32Array(cap * c.hiddenSize);
    this.proj = new Float32Array(cap * c.hiddenSize);
    this.q = new Float32Array(cap * c.numHeads * c.headDim);
    this.k = new Float32Array(cap * c.numKvHeads * c.headDim);
    this.v = new Float32Array(cap * c.numKvHeads * c.headDim);
    this.attn = new Float32Array(cap * c.numHeads * c.headDim);
    this.ff = new Float32Array(cap * this.ffWidth);
    this.ffOut = new Float32Array(cap * c.hiddenSize);
    this.gx = new Float32Array(cap * c.hiddenSize);
    this.logits = new Float32Array(cap * (r?.numExperts ?? 0));
    this.ids = new Int32Array(cap * (r?.topK ?? 0));
    this.weights = new Float32Array(cap * (r?.topK ?? 0));
    this.capacity = cap;
  }
}

/**
 * Nemotron-H's routing of n rows of router logits [n, numExperts]: into ids / weights [n, topK]
 * (transformers' NemotronHMoE.route_tokens_to_experts). Scores are sigmoid(logits); the choice is
 * made on scores + correction, within the topkGroup groups whose two best choice scores sum highest
 * (ties to the lower index, as torch.topk); the weights are the chosen experts' plain scores,
 * renormalised (+1e-20) when normTopkProb, times routedScalingFactor. Computed in f64.
 */
export function routeSigmoidGroups(
  logits: Float32Array,
  n: number,
  r: SigmoidRoutingConfig,
  correction: Float32Array,
  ids: Int32Array,
  weights: Float32Array,
): void {
  const E = r.numExperts;
  const perGroup = E / r.nGroup;
  const scores = new Float64Array(E);
  const choice = new Float64Array(E);
  const groupScore = new Float64Array(r.nGroup);
  const allowed = new Uint8Array(r.nGroup);
  const taken = new Uint8Array(E);
  // Best index by value among candidates, ties to the lower index.
  const best = (vals: Float64Array, ok: (i: number) => boolean, count: number): number => {
    let bi = -1;
    for (let i = 0; i < count; i++) if (ok(i) && (bi < 0 || vals[i] > vals[bi])) bi = i;
    return bi;
  };
  for (let row = 0; row < n; row++) {
    for (let e = 0; e < E; e++) {
      scores[e] = 1 / (1 + Math.exp(-logits[row * E + e]));
      choice[e] = scores[e] + correction[e];
    }
    for (let g = 0; g < r.nGroup; g++) {
      let a = -Infinity,
        b = -Infinity;
      for (let j = 0; j < perGroup; j++) {
        const v = choice[g * perGroup + j];
        if (v > a) {
          b = a;
          a = v;
        } else if (v > b) b = v;
      }
      groupScore[g] = perGroup > 1 ? a + b : a;
    }
    allowed.fill(0);
    for (let j = 0; j < r.topkGroup; j++) allowed[best(groupScore, (g) => allowed[g] === 0, r.nGroup)] = 1;
    taken.fill(0);
    let sum = 0;
    for (let j = 0; j < r.topK; j++) {
      const e = best(choice, (i) => taken[i] === 0 && allowed[Math.floor(i / perGroup)] === 1, E);
      if (e < 0) throw new Error(`moe routing: row ${row} has fewer than ${r.topK} experts in its groups`);
      taken[e] = 1;
      ids[row * r.topK + j] = e;
      weights[row * r.topK + j] = scores[e];
      sum += scores[e];
    }
    const denom = r.normTopkProb ? sum + 1e-20 : 1;
    for (let j = 0; j < r.topK; j++) {
      const i = row * r.topK + j;
      weights[i] = (scores[ids[i]] / denom) * r.routedScalingFactor;
    }
  }
}

/** Mamba2 / Nemotron-H: embeddings → N × [RMSNorm → mixer → residual] → norm_f → lm_head. */
export class SsmHybridModel implements Model {
  readonly config: ModelConfig;
  private readonly ssm: SsmConfig | null;
  private readonly embedTokens: WeightMatrix;
  private readonly lmHead: WeightMatrix;
  private readonly finalNorm: Float32Array;
  private readonly blocks: Block[];
  private readonly scratch: Scratch;
  private readonly mambaScratch: Mamba2Scratch | null;
  private lastRows = 0;

  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    names: SsmModelNames,
  ) {
    const c = checkpoint.config;
    this.config = c;
    const types = c.layerTypes;
    if (!types || types.length !== c.numLayers)
      throw new Error(`${checkpoint.source}: no layer type for each of the ${c.numLayers} layers`);
    this.ssm = c.ssm ?? null;
    if (types.includes('mamba') && !this.ssm) throw new Error(`${checkpoint.source}: Mamba layers without their shapes`);
    if (types.includes('full_attention') && c.numHeads % c.numKvHeads !== 0)
      throw new Error(`numHeads ${c.numHeads} is not a multiple of numKvHeads ${c.numKvHeads}`);
    const r = c.sigmoidRouting;
    if (types.includes('moe') && !r) throw new Error(`${checkpoint.source}: MoE layers without their routing`);
    const w = new CheckpointWeights(checkpoint, ops);
    const p = names.prefix;
    // The loader names the embeddings model.embed_tokens.weight (loaders/state-space-names.ts).
    this.embedTokens = w.matrix('model.embed_tokens.weight', c.vocabSize, c.hiddenSize);
    this.lmHead = c.tieWordEmbeddings ? this.embedTokens : w.matrix('lm_head.weight', c.vocabSize, c.hiddenSize);
    this.finalNorm = w.vector(`${p}norm_f.weight`, c.hiddenSize);
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const mlp = (m: string, width: number): Relu2Mlp => ({
      up: w.matrix(`${m}up_proj.weight`, width, c.hiddenSize),
      down: w.matrix(`${m}down_proj.weight`, c.hiddenSize, width),
      upBias: w.optionalVector(`${m}up_proj.bias`, width),
      downBias: w.optionalVector(`${m}down_proj.bias`, c.hiddenSize),
    });
    this.blocks = types.map((type, i) => {
      const b = `${p}layers.${i}.`;
      const m = `${b}mixer.`;
      const block: Block = { type, norm: w.vector(`${b}norm.weight`, c.hiddenSize), mamba: null, attention: null, mlp: null, moe: null };
      if (type === 'mamba' && this.ssm) block.mamba = loadMamba2Mixer(w, c, this.ssm, m);
      else if (type === 'full_attention')
        block.attention = {
          q: w.matrix(`${m}q_proj.weight`, qWidth, c.hiddenSize),
          k: w.matrix(`${m}k_proj.weight`, kvWidth, c.hiddenSize),
          v: w.matrix(`${m}v_proj.weight`, kvWidth, c.hiddenSize),
          o: w.matrix(`${m}o_proj.weight`, c.hiddenSize, qWidth),
        };
      else if (type === 'mlp') block.mlp = mlp(m, c.intermediateSize);
      else if (type === 'moe' && r) {
        const all: [number, number] = [0, r.numExperts];
        const [up] = w.stackedMatrices(`${m}experts.up_proj`, r.numExperts, r.expertWidth, c.hiddenSize, all, [
          { start: 0, rows: r.expertWidth },
        ]);
        const [down] = w.stackedMatrices(`${m}experts.down_proj`, r.numExperts, c.hiddenSize, r.expertWidth, all, [
          { start: 0, rows: c.hiddenSize },
        ]);
        block.moe = {
          router: w.matrix(`${m}gate.weight`, r.numExperts, c.hiddenSize),
          correction: w.optionalVector(`${m}gate.e_score_correction_bias`, r.numExperts) ?? new Float32Array(r.numExperts),
          up,
          down,
          shared: r.sharedWidth > 0 ? mlp(`${m}shared_experts.`, r.sharedWidth) : null,
        };
      } else throw new Error(`layer ${i}: unknown block type ${type}`);
      return block;
    });
    const ffWidth = Math.max(
      types.includes('mlp') ? c.intermediateSize : 0,
      r && types.includes('moe') ? Math.max(r.expertWidth, r.sharedWidth) : 0,
    );
    this.scratch = new Scratch(c, ffWidth);
    this.mambaScratch = this.ssm ? new Mamba2Scratch(this.ssm) : null;
    if (this.ssm && types.includes('mamba')) this.createRecurrentState = (numSlots) => this.newState(numSlots);
  }

  /** Present when some layer is a Mamba mixer (set in the constructor). */
  createRecurrentState?: (numSlots: number) => RecurrentState;

  private newState(numSlots: number): MambaState {
    if (!this.ssm) throw new Error('no recurrent layers');
    return new MambaState(
      numSlots,
      this.ssm,
      this.blocks.map((b) => b.mamba !== null),
    );
  }

  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions, state?: RecurrentState): Float32Array {
    const c = this.config;
    const ops = this.ops;
    const n = batch.tokens.length;
    const recurrent = this.checkBatch(batch, kv, state);
    const s = this.scratch;
    s.ensure(n);
    this.lastRows = n;
    // Sequences starting at position 0 start from a zero state.
    if (recurrent) batch.seqs.forEach((seq, i) => seq.kvLen === seq.qLen && recurrent.state.reset(recurrent.seqs[i].slot));
    const skip = options?.skipLayers;
    const onHidden = options?.onHidden;
    const hs = c.hiddenSize;
    ops.embed(batch.tokens, this.embedTokens, s.hidden);
    onHidden?.(0, s.hidden.subarray(0, n * hs));
    for (let l = 0; l < c.numLayers; l++) {
      if (skip?.has(l)) continue;
      const block = this.blocks[l];
      ops.rmsnorm(s.hidden, n, hs, block.norm, c.rmsNormEps, s.normed);
      if (block.mamba && this.ssm && this.mambaScratch && recurrent) {
        const layerState = recurrent.state.layers[l];
        if (!layerState) throw new Error(`recurrent state has no slot storage for layer ${l}`);
        runMamba2Mixer(ops, c, this.ssm, block.mamba, this.mambaScratch, s.normed, n, recurrent.seqs, layerState, s.proj);
      } else if (block.attention) this.attention(block.attention, n, batch, kv[l]);
      else if (block.mlp) this.mlp(block.mlp, s.normed, n, s.proj);
      else if (block.moe) this.moe(block.moe, n);
      ops.add(s.hidden, s.proj, s.hidden, n * hs);
      onHidden?.(l + 1, s.hidden.subarray(0, n * hs));
    }
    return this.logits(batch.logitRows, options?.head);
  }

  /** Attention without RoPE over s.normed into s.proj. */
  private attention(w: AttentionWeights, n: number, batch: ForwardBatch, kv: KvLayer): void {
    const c = this.config;
    const ops = this.ops;
    const s = this.scratch;
    ops.matmul(s.normed, n, w.q, s.q);
    ops.matmul(s.normed, n, w.k, s.k);
    ops.matmul(s.normed, n, w.v, s.v);
    ops.storeKv(kv, s.k, s.v, n, batch.slots);
    ops.attention(s.q, kv, batch.seqs, { numHeads: c.numHeads, scale: 1 / Math.sqrt(c.headDim), slidingWindow: null }, s.attn);
    ops.matmul(s.attn, n, w.o, s.proj);
  }

  /** down(relu(up · x)²) over n rows of x into out. */
  private mlp(m: Relu2Mlp, x: Float32Array, n: number, out: Float32Array): void {
    const s = this.scratch;
    this.ops.matmul(x, n, m.up, s.ff, m.upBias);
    relu2InPlace(s.ff, n * m.up.rows);
    this.ops.matmul(s.ff, n, m.down, out, m.downBias);
  }

  /** The routed experts plus the shared expert over s.normed into s.proj. */
  private moe(m: MoeWeights, n: number): void {
    const r = this.config.sigmoidRouting;
    if (!r) throw new Error('a MoE layer without its routing');
    const ops = this.ops;
    const s = this.scratch;
    const hs = this.config.hiddenSize;
    ops.matmul(s.normed, n, m.router, s.logits);
    routeSigmoidGroups(s.logits, n, r, m.correction, s.ids, s.weights);
    s.proj.fill(0, 0, n * hs);
    // Per expert: gather its rows, run the FFN once over them, add each row's weighted output.
    const rows: number[] = [];
    const rowWeights: number[] = [];
    for (let e = 0; e < r.numExperts; e++) {
      rows.length = 0;
      rowWeights.length = 0;
      for (let i = 0; i < n * r.topK; i++)
        if (s.ids[i] === e) {
          rows.push(Math.floor(i / r.topK));
          rowWeights.push(s.weights[i]);
        }
      if (rows.length === 0) continue;
      rows.forEach((row, j) => s.gx.set(s.normed.subarray(row * hs, (row + 1) * hs), j * hs));
      this.mlp({ up: m.up[e], down: m.down[e] }, s.gx, rows.length, s.ffOut);
      rows.forEach((row, j) => {
        const wgt = rowWeights[j];
        for (let d = 0; d < hs; d++) s.proj[row * hs + d] += wgt * s.ffOut[j * hs + d];
      });
    }
    if (!m.shared) return;
    this.mlp(m.shared, s.normed, n, s.ffOut);
    ops.add(s.proj, s.ffOut, s.proj, n * hs);
  }

  outputRows(ids: Int32Array, out: Float32Array): void {
    this.ops.embed(ids, this.lmHead, out);
  }

  outputHead(ids: Int32Array): OutputHead {
    return bf16OutputHead(this.ops, this.lmHead, ids, this.config.hiddenSize);
  }

  lastHidden(): Float32Array {
    return this.scratch.hidden.subarray(0, this.lastRows * this.config.hiddenSize);
  }

  private logits(rows: Int32Array, head?: OutputHead): Float32Array {
    const c = this.config;
    const s = this.scratch;
    const logits = selectedRowLogits(
      this.ops,
      s.hidden,
      s.normed,
      rows,
      c.hiddenSize,
      { weight: this.finalNorm, eps: c.rmsNormEps },
      head?.weight ?? this.lmHead,
    );
    return logits;
  }

  /** Checks the batch; for a model with Mamba layers, its state and each sequence's slot. */
  private checkBatch(
    batch: ForwardBatch,
    kv: KvLayer[],
    state: RecurrentState | undefined,
  ): { state: MambaState; seqs: RecurrentSeq[] } | null {
    const n = batch.tokens.length;
    if (batch.positions.length !== n || batch.slots.length !== n) {
      throw new Error(`forward: ${n} tokens but ${batch.positions.length} positions and ${batch.slots.length} slots`);
    }
    if (kv.length !== this.config.numLayers) throw new Error(`forward: ${kv.length} KV layers for a ${this.config.numLayers}-layer model`);
    for (const r of batch.logitRows) if (r < 0 || r >= n) throw new Error(`forward: logit row ${r} outside the ${n}-token batch`);
    if (batch.inputEmbeddings) throw new Error(`forward: ${this.config.architecture} runs text only (no input embeddings)`);
    if (batch.mropePositions) throw new Error(`forward: ${this.config.architecture} runs text only (no M-RoPE positions)`);
    if (!this.createRecurrentState) return null;
    if (!(state instanceof MambaState)) throw new Error('forward: this model has recurrent layers: pass its createRecurrentState() state');
    if (state.layers.length !== this.config.numLayers) throw new Error('forward: recurrent state made for another model');
    const slots = batch.stateSlots;
    if (!slots || slots.length !== batch.seqs.length) {
      throw new Error(`forward: ${slots?.length ?? 0} state slots for ${batch.seqs.length} sequences`);
    }
    const seen = new Set<number>();
    const seqs = batch.seqs.map((seq, i) => {
      state.check(slots[i]);
      if (seen.has(slots[i])) throw new Error(`forward: state slot ${slots[i]} given to two sequences`);
      seen.add(slots[i]);
      return { qStart: seq.qStart, qLen: seq.qLen, slot: slots[i] };
    });
    return { state, seqs };
  }
}

// ---- config -------------------------------------------------------------------------------------

const PATTERN: Readonly<Record<string, LayerType>> = { M: 'mamba', '*': 'full_attention', '-': 'mlp', E: 'moe' };
const BLOCK_NAMES: Readonly<Record<string, LayerType>> = {
  mamba: 'mamba',
  linear_attention: 'mamba',
  attention: 'full_attention',
  full_attention: 'full_attention',
  mlp: 'mlp',
  moe: 'moe',
};

function positiveInt(raw: Json, key: string, fallback?: number): number {
  const v = raw[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`missing or invalid "${key}"`);
  return v;
}

/** The first of `keys` present in raw (transformers' legacy aliases), else the fallback. */
function firstOf(raw: Json, keys: readonly string[], fallback: unknown): unknown {
  for (const k of keys) if (raw[k] !== undefined && raw[k] !== null) return raw[k];
  return fallback;
}

/** Nemotron-H's block list: hybrid_override_pattern (M * - E), or the layers_block_type / layer_types list. */
export function nemotronLayerTypes(raw: Json): LayerType[] {
  const pattern = raw.hybrid_override_pattern;
  const list = raw.layers_block_type ?? raw.layer_types;
  if (typeof pattern === 'string' && pattern.length > 0) {
    return [...pattern].map((ch) => {
      const t = PATTERN[ch];
      if (!t) throw new Error(`hybrid_override_pattern: unknown block ${JSON.stringify(ch)}`);
      return t;
    });
  }
  if (Array.isArray(list) && list.length > 0) {
    return list.map((name) => {
      const t = typeof name === 'string' ? BLOCK_NAMES[name] : undefined;
      if (!t) throw new Error(`layers_block_type: unknown block ${JSON.stringify(name)}`);
      return t;
    });
  }
  throw new Error('neither hybrid_override_pattern nor layers_block_type');
}

function nemotronConfig(raw: Json): Partial<ModelConfig> {
  const layerTypes = nemotronLayerTypes(raw);
  const eps = typeof raw.layer_norm_epsilon === 'number' ? raw.layer_norm_epsilon : 1e-5;
  if ((raw.mlp_hidden_act ?? 'relu2') !== 'relu2') throw new Error(`mlp_hidden_act ${String(raw.mlp_hidden_act)} (only relu2 is run)`);
  const extra: Partial<ModelConfig> = { layerTypes, numLayers: layerTypes.length, rmsNormEps: eps };
  if (layerTypes.includes('mamba')) {
    if ((raw.mamba_hidden_act ?? 'silu') !== 'silu') throw new Error(`mamba_hidden_act ${String(raw.mamba_hidden_act)} (only silu is run)`);
    const numHeads = positiveInt(raw, 'mamba_num_heads', 128);
    const headDim = positiveInt(raw, 'mamba_head_dim', 64);
    const nGroups = Number(firstOf(raw, ['n_groups', 'mamba_n_groups'], 8));
    if (!Number.isInteger(nGroups) || nGroups < 1 || numHeads % nGroups !== 0)
      throw new Error(`n_groups ${nGroups} does not divide mamba_num_heads ${numHeads}`);
    const ssm: SsmConfig = {
      numHeads,
      headDim,
      stateSize: positiveInt(raw, 'ssm_state_size', 128),
      nGroups,
      convKernel: Number(firstOf(raw, ['conv_kernel', 'mamba_d_conv'], 4)),
      convBias: firstOf(raw, ['use_conv_bias', 'mamba_conv_bias'], true) === true,
      projBias: raw.use_bias === true,
      // NemotronHMamba2Mixer.torch_forward: torch.clamp(dt, self.time_step_min), no upper bound.
      dtMin: Number(firstOf(raw, ['time_step_min', 'mamba_dt_min'], 0.001)),
      dtMax: Infinity,
      normGroupSize: (numHeads * headDim) / nGroups,
    };
    if (!Number.isInteger(ssm.convKernel) || ssm.convKernel < 1) throw new Error(`conv_kernel ${ssm.convKernel} is not a positive integer`);
    extra.ssm = ssm;
  }
  if (layerTypes.includes('moe')) {
    if (raw.moe_latent_size !== undefined && raw.moe_latent_size !== null)
      throw new Error('moe_latent_size (latent MoE projections) is not run');
    const numExperts = positiveInt(raw, 'n_routed_experts', 8);
    const topK = positiveInt(raw, 'num_experts_per_tok', 2);
    const nGroup = positiveInt(raw, 'n_group', 1);
    const topkGroup = positiveInt(raw, 'topk_group', 1);
    if (numExperts % nGroup !== 0 || topkGroup > nGroup || topK > (numExperts / nGroup) * topkGroup)
      throw new Error(`routing: ${topK} of ${numExperts} experts in ${topkGroup} of ${nGroup} groups`);
    const shared =
      typeof raw.n_shared_experts === 'number' && raw.n_shared_experts === 0
        ? 0
        : positiveInt(raw, 'moe_shared_expert_intermediate_size', 7688);
    extra.sigmoidRouting = {
      numExperts,
      topK,
      nGroup,
      topkGroup,
      normTopkProb: raw.norm_topk_prob !== false,
      routedScalingFactor: typeof raw.routed_scaling_factor === 'number' ? raw.routed_scaling_factor : 1,
      expertWidth: positiveInt(raw, 'moe_intermediate_size', 7688),
      sharedWidth: shared,
    };
  }
  return extra;
}

/** A per-layer GGUF array (or a scalar for every layer). */
function perLayer(g: GgufConfigReader, key: string, numLayers: number): number[] {
  const v = g.value(key);
  if (v !== null && typeof v === 'object' && 'length' in v) {
    const arr = Array.from(v as ArrayLike<number>, Number);
    if (arr.length !== numLayers) throw new Error(`${g.arch}.${key} has ${arr.length} entries for ${numLayers} layers`);
    return arr;
  }
  const one = g.num(key) ?? 0;
  return new Array<number>(numLayers).fill(one);
}

/** A llama.cpp 'nemotron_h' / 'nemotron_h_moe' file's block pattern, SSM and MoE keys (src/models/nemotron-h.cpp). */
function ggufNemotronHConfig(g: GgufConfigReader, c: ModelConfig): Partial<ModelConfig> {
  const kv = perLayer(g, 'attention.head_count_kv', c.numLayers);
  const ff = perLayer(g, 'feed_forward_length', c.numLayers);
  const numExperts = g.num('expert_count') ?? 0;
  const layerTypes: LayerType[] = kv.map((k, i) =>
    k === 0 && ff[i] === 0 ? 'mamba' : ff[i] === 0 ? 'full_attention' : numExperts > 0 ? 'moe' : 'mlp',
  );
  layerTypes.forEach((t, i) => {
    if (t === 'mamba' && !g.hasTensor(`blk.${i}.ssm_in.weight`) && g.hasTensor(`blk.${i}.ffn_up.weight`))
      throw new Error(`layer ${i} is a dense MLP block beside MoE blocks, which the file's feed_forward_length (0) cannot say`);
  });
  const attnKv = kv.filter((k) => k > 0);
  if (attnKv.some((k) => k !== attnKv[0])) throw new Error(`attention.head_count_kv varies between attention layers (${kv.join(',')})`);
  const widths = ff.filter((f) => f > 0);
  if (numExperts === 0 && widths.some((f) => f !== widths[0]))
    throw new Error(`feed_forward_length varies between MLP layers (${ff.join(',')})`);
  // Mamba2Model writes layer_norm_rms_epsilon; GraniteHybridModel only TextModel's layer_norm_epsilon, which llama.cpp falls back to.
  const eps = g.num('attention.layer_norm_rms_epsilon') ?? g.num('attention.layer_norm_epsilon') ?? c.rmsNormEps;
  const out: Partial<ModelConfig> = { layerTypes, rmsNormEps: eps, numKvHeads: attnKv[0] ?? c.numHeads };
  if (numExperts === 0 && widths.length > 0) out.intermediateSize = widths[0];
  if (layerTypes.includes('mamba')) out.ssm = ggufSsmConfig(g, c.numLayers);
  if (numExperts > 0) {
    if ((g.num('moe_latent_size') ?? 0) > 0) throw new Error('moe_latent_size (latent MoE projections) is not run');
    const width = g.num('expert_feed_forward_length');
    const topK = g.num('expert_used_count');
    if (width === undefined || topK === undefined) throw new Error('expert_feed_forward_length and expert_used_count are required');
    const nGroup = g.num('expert_group_count') ?? 1;
    const topkGroup = g.num('expert_group_used_count') ?? nGroup;
    const norm = g.value('expert_weights_norm');
    out.sigmoidRouting = {
      numExperts,
      topK,
      nGroup,
      topkGroup,
      normTopkProb: norm === true,
      routedScalingFactor: g.num('expert_weights_scale') ?? 1,
      expertWidth: width,
      sharedWidth: g.num('expert_shared_feed_forward_length') ?? 0,
    };
  }
  return out;
}

const options = (): DecoderOptions => ({ qkvBias: 'none', oBiasIfPresent: false, qkNorm: false, slidingWindow: null });

export const nemotronH: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  // The layer count comes from the block pattern (hfConfig); NemotronHConfig's defaults otherwise.
  hfDefaults: { num_hidden_layers: 0, max_position_embeddings: 4096, num_key_value_heads: 8, intermediate_size: 21504 },
  hfConfig: nemotronConfig,
  ggufConfig: ggufNemotronHConfig,
  ggufPerLayerKeys: ['attention.head_count_kv', 'feed_forward_length'],
  // Its blocks are not the shared decoder layer's; these describe its attention for callers that ask.
  decoderOptions: options,
  create: (checkpoint, ops) => new SsmHybridModel(checkpoint, ops, { prefix: 'model.' }),
};
