// Qwen3.5 (Qwen3_5ForConditionalGeneration / Qwen3_5MoeForConditionalGeneration, text path; model_type
// qwen3_5, qwen3_5_moe and their text-only qwen3_5_text, qwen3_5_moe_text): a hybrid of Gated DeltaNet
// linear-attention layers (gated-delta-net.ts, per-sequence recurrent state) and gated full attention,
// as config `layer_types` lists them. Against Qwen3:
//   - every RMSNorm but the DeltaNet's gated one scales by (1 + w) (weights stored zero-centred);
//   - full attention: q_proj gives each head its query and an output gate ([q | gate] per head),
//     attention · sigmoid(gate) goes into o_proj; q/k norms; RoPE on the first
//     head_dim · partial_rotary_factor values of each head only (M-RoPE's sections with text positions,
//     all equal, are plain RoPE there; the vision tower is not run);
//   - MoE (qwen3_5_moe): routed experts, top-k renormalised, plus a shared expert scaled by
//     sigmoid(shared_expert_gate · x).
// Attention layers use the paged KV cache; linear-attention layers keep a RecurrentState slot per
// sequence (ForwardBatch.stateSlots), which this model creates (createRecurrentState).
// GGUF: llama.cpp's 'qwen35' / 'qwen35moe' load. The converter (Qwen3_5TextModel / Qwen3_5MoeTextModel over
// _LinearAttentionVReorderBase, Qwen3NextModel and Qwen2MoeModel, conversion/qwen.py) adds 1 to every norm but
// linear_attn.norm, stores A_log as −exp(A_log), squeezes conv1d, and where linear_num_value_heads >
// linear_num_key_heads reorders the V heads from grouped to tiled order (in_proj_qkv's V rows, in_proj_z,
// in_proj_a / b, A_log, dt_bias, conv1d's V channels, out_proj's columns): loaders/gguf-names.ts undoes each.
// It writes the layer pattern as attention.recurrent_layers (else full_attention_interval), the linear-attention
// shapes as ssm.* keys, the rotary width as rope.dimension_count (M-RoPE's rope.dimension_sections do not matter
// for text), and the MoE's gated shared expert (ffn_*_shexp, ffn_gate_inp_shexp) with Qwen2MoeModel's keys:
// ggufConfig below.
// MTP layers (nextn_predict_layers, counted in block_count) are not run; fused full-attention qkv
// (--fuse-qkv) is not mapped (the file is refused for a missing q_proj).
import type { KvLayer, Ops, RecurrentSeq, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, LayerType, LinearAttentionConfig, ModelConfig } from '../types.js';
import type { ArchitectureModule, ForwardBatch, ForwardOptions, GgufConfigReader, Model, OutputHead, RecurrentState } from './model.js';
import type { ModelOptions } from './expert-placement.js';
import { CheckpointWeights } from './weights.js';
import { GdnScratch, loadGatedDeltaNet, runGatedDeltaNet, type GatedDeltaNetWeights } from './gated-delta-net.js';
import { LinearAttentionState } from './recurrent-state.js';
import { MoeScratch, loadMoeBlock, type MoeBlock } from './moe.js';
import type { DecoderOptions } from './decoder-layer.js';
import { bf16OutputHead, selectedRowLogits } from './output-head.js';

type Json = Readonly<Record<string, unknown>>;

/** config.json's layer_types and linear_* keys (text_config's fields merged over the top level's). */
function qwen35Config(raw: Json): Partial<ModelConfig> {
  const numLayers = raw.num_hidden_layers;
  const types = raw.layer_types;
  const int = (key: string): number => {
    const v = raw[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`missing or invalid "${key}"`);
    return v;
  };
  let layerTypes: LayerType[];
  if (Array.isArray(types)) {
    if (types.length !== numLayers) throw new Error(`layer_types has ${types.length} entries for ${String(numLayers)} layers`);
    layerTypes = types.map((t) => {
      if (t !== 'full_attention' && t !== 'linear_attention') throw new Error(`unknown layer type ${JSON.stringify(t)}`);
      return t;
    });
  } else {
    // transformers' default: every full_attention_interval-th layer (default 4) is full attention.
    const interval = typeof raw.full_attention_interval === 'number' ? raw.full_attention_interval : 4;
    layerTypes = Array.from({ length: int('num_hidden_layers') }, (_, i) =>
      (i + 1) % interval === 0 ? 'full_attention' : 'linear_attention',
    );
  }
  const extra: Partial<ModelConfig> = { layerTypes };
  if (layerTypes.includes('linear_attention')) {
    const la: LinearAttentionConfig = {
      convKernel: int('linear_conv_kernel_dim'),
      numKeyHeads: int('linear_num_key_heads'),
      numValueHeads: int('linear_num_value_heads'),
      keyHeadDim: int('linear_key_head_dim'),
      valueHeadDim: int('linear_value_head_dim'),
    };
    if (la.numValueHeads % la.numKeyHeads !== 0) {
      throw new Error(`linear_num_value_heads ${la.numValueHeads} is not a multiple of linear_num_key_heads ${la.numKeyHeads}`);
    }
    extra.linearAttention = la;
  }
  if (typeof raw.shared_expert_intermediate_size === 'number' && raw.shared_expert_intermediate_size > 0) {
    extra.sharedExpertIntermediateSize = raw.shared_expert_intermediate_size;
  }
  return extra;
}

/**
 * llama.cpp's qwen35 / qwen35moe keys (Qwen3NextModel.set_gguf_parameters; read as llama_model_qwen35[moe]::
 * load_arch_hparams does): the layer pattern, the Gated DeltaNet's shapes, the rotary width and the shared expert.
 */
function qwen35GgufConfig(gguf: GgufConfigReader, common: ModelConfig): Partial<ModelConfig> {
  const key = (name: string): string => `${gguf.arch}.${name}`;
  const int = (name: string): number => {
    const v = gguf.num(name);
    if (v === undefined || !Number.isInteger(v) || v < 1) throw new Error(`missing or invalid ${key(name)}`);
    return v;
  };
  // MTP blocks follow the main stack in block_count (_QwenMtpMixin); svc does not run them.
  const numLayers = common.numLayers - (gguf.num('nextn_predict_layers') ?? 0);
  if (numLayers < 1) throw new Error(`${key('nextn_predict_layers')} leaves no layers of ${common.numLayers}`);
  // One flag per block (true: linear attention), else every full_attention_interval-th layer (default 4) is full attention.
  const flags = gguf.value('attention.recurrent_layers');
  let layerTypes: LayerType[];
  if (flags !== undefined) {
    if (!Array.isArray(flags) || flags.length < numLayers)
      throw new Error(`${key('attention.recurrent_layers')} is not one flag per layer`);
    layerTypes = flags.slice(0, numLayers).map((f) => (f ? 'linear_attention' : 'full_attention'));
  } else {
    const interval = gguf.num('full_attention_interval') ?? 4;
    layerTypes = Array.from({ length: numLayers }, (_, i) => ((i + 1) % interval === 0 ? 'full_attention' : 'linear_attention'));
  }
  const extra: Partial<ModelConfig> = { numLayers, layerTypes };
  if (common.moeLayers) extra.moeLayers = common.moeLayers.slice(0, numLayers);
  if (layerTypes.includes('linear_attention')) {
    // state_size is the K head size, group_count the K heads, time_step_rank the V heads, inner_size all V values.
    const numValueHeads = int('ssm.time_step_rank');
    const inner = int('ssm.inner_size');
    const la: LinearAttentionConfig = {
      convKernel: int('ssm.conv_kernel'),
      numKeyHeads: int('ssm.group_count'),
      numValueHeads,
      keyHeadDim: int('ssm.state_size'),
      valueHeadDim: inner / numValueHeads,
    };
    if (!Number.isInteger(la.valueHeadDim)) throw new Error(`${key('ssm.inner_size')} ${inner} is not whole heads of ${numValueHeads}`);
    if (numValueHeads % la.numKeyHeads !== 0)
      throw new Error(`${key('ssm.time_step_rank')} ${numValueHeads} is not a multiple of ${key('ssm.group_count')} ${la.numKeyHeads}`);
    extra.linearAttention = la;
  }
  // head_dim · partial_rotary_factor. rope.dimension_sections (M-RoPE) is not needed: llama.cpp gives a text token
  // its position in every section (llama_batch_allocr), as transformers does, so text rotates as plain RoPE.
  const rotary = gguf.num('rope.dimension_count');
  if (rotary !== undefined) extra.rotaryDim = rotary;
  const shared = gguf.num('expert_shared_feed_forward_length') ?? 0;
  if (shared > 0) extra.sharedExpertIntermediateSize = shared;
  return extra;
}

/** (1 + w): Qwen3.5's RMSNorm weights are stored zero-centred. */
function onePlus(w: Float32Array): Float32Array {
  return w.map((v) => 1 + v);
}

interface SwiGlu {
  gate: WeightMatrix;
  up: WeightMatrix;
  down: WeightMatrix;
}

interface AttentionWeights {
  /** q_proj [numHeads · 2 · headDim, hidden]: per head its query rows, then its gate rows. */
  qGate: WeightMatrix;
  k: WeightMatrix;
  v: WeightMatrix;
  o: WeightMatrix;
  qNorm: Float32Array;
  kNorm: Float32Array;
}

interface Qwen35Layer {
  inputNorm: Float32Array;
  postNorm: Float32Array;
  attention: AttentionWeights | null;
  linear: GatedDeltaNetWeights | null;
  mlp: SwiGlu | null;
  moe: MoeBlock | null;
  shared: (SwiGlu & { gateScore: WeightMatrix }) | null;
}

class Scratch {
  capacity = 0;
  hidden = new Float32Array(0);
  normed = new Float32Array(0);
  qGate = new Float32Array(0);
  q = new Float32Array(0);
  gate = new Float32Array(0);
  k = new Float32Array(0);
  v = new Float32Array(0);
  rot = new Float32Array(0);
  attn = new Float32Array(0);
  proj = new Float32Array(0);
  ffGate = new Float32Array(0);
  ffUp = new Float32Array(0);
  score = new Float32Array(0);

  constructor(
    private readonly c: ModelConfig,
    private readonly ffWidth: number,
  ) {}

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const c = this.c;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    this.hidden = new Float32Array(cap * c.hiddenSize);
    this.normed = new Float32Array(cap * c.hiddenSize);
    this.qGate = new Float32Array(cap * 2 * qWidth);
    this.q = new Float32Array(cap * qWidth);
    this.gate = new Float32Array(cap * qWidth);
    this.k = new Float32Array(cap * kvWidth);
    this.v = new Float32Array(cap * kvWidth);
    this.rot = new Float32Array(cap * c.numHeads * (c.rotaryDim ?? c.headDim));
    this.attn = new Float32Array(cap * qWidth);
    this.proj = new Float32Array(cap * c.hiddenSize);
    this.ffGate = new Float32Array(cap * this.ffWidth);
    this.ffUp = new Float32Array(cap * this.ffWidth);
    this.score = new Float32Array(cap);
    this.capacity = cap;
  }
}

/** Qwen3.5's text model: embed → N × [(1+w)-RMSNorm → Gated DeltaNet or gated attention → residual → (1+w)-RMSNorm → MLP / MoE → residual] → norm → lm_head. */
export class Qwen35Model implements Model {
  readonly config: ModelConfig;
  private readonly la: LinearAttentionConfig | null;
  private readonly embedTokens: WeightMatrix;
  private readonly lmHead: WeightMatrix;
  private readonly finalNorm: Float32Array;
  private readonly layers: Qwen35Layer[];
  private readonly scratch: Scratch;
  private readonly gdn: GdnScratch | null;
  private readonly moeScratch: MoeScratch | null;
  private lastRows = 0;

  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    placement?: ModelOptions,
  ) {
    const c = checkpoint.config;
    this.config = c;
    if (c.numHeads % c.numKvHeads !== 0) throw new Error(`numHeads ${c.numHeads} is not a multiple of numKvHeads ${c.numKvHeads}`);
    const rotaryDim = c.rotaryDim ?? c.headDim;
    if (rotaryDim % 2 !== 0 || rotaryDim > c.headDim)
      throw new Error(`rotary dim ${rotaryDim} must be even and at most headDim ${c.headDim}`);
    const types = c.layerTypes ?? [];
    this.la = c.linearAttention ?? null;
    if (types.includes('linear_attention') && !this.la)
      throw new Error(`${checkpoint.source}: linear-attention layers without their shapes`);
    const w = new CheckpointWeights(checkpoint, ops);
    this.embedTokens = w.matrix('model.embed_tokens.weight', c.vocabSize, c.hiddenSize);
    this.lmHead = c.tieWordEmbeddings ? this.embedTokens : w.matrix('lm_head.weight', c.vocabSize, c.hiddenSize);
    this.finalNorm = onePlus(w.vector('model.norm.weight', c.hiddenSize));
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const swiglu = (p: string, width: number): SwiGlu => ({
      gate: w.matrix(`${p}gate_proj.weight`, width, c.hiddenSize),
      up: w.matrix(`${p}up_proj.weight`, width, c.hiddenSize),
      down: w.matrix(`${p}down_proj.weight`, c.hiddenSize, width),
    });
    this.layers = [];
    for (let i = 0; i < c.numLayers; i++) {
      const p = `model.layers.${i}.`;
      const linear = types[i] === 'linear_attention';
      const moe = c.moeLayers?.[i] ? loadMoeBlock(w, c, i, p, placement?.experts, true) : null;
      const sharedWidth = c.sharedExpertIntermediateSize;
      this.layers.push({
        inputNorm: onePlus(w.vector(`${p}input_layernorm.weight`, c.hiddenSize)),
        postNorm: onePlus(w.vector(`${p}post_attention_layernorm.weight`, c.hiddenSize)),
        linear: linear && this.la ? loadGatedDeltaNet(w, c, this.la, p) : null,
        attention: linear
          ? null
          : {
              qGate: w.matrix(`${p}self_attn.q_proj.weight`, 2 * qWidth, c.hiddenSize),
              k: w.matrix(`${p}self_attn.k_proj.weight`, kvWidth, c.hiddenSize),
              v: w.matrix(`${p}self_attn.v_proj.weight`, kvWidth, c.hiddenSize),
              o: w.matrix(`${p}self_attn.o_proj.weight`, c.hiddenSize, qWidth),
              qNorm: onePlus(w.vector(`${p}self_attn.q_norm.weight`, c.headDim)),
              kNorm: onePlus(w.vector(`${p}self_attn.k_norm.weight`, c.headDim)),
            },
        mlp: moe ? null : swiglu(`${p}mlp.`, c.intermediateSize),
        moe,
        shared:
          moe && sharedWidth
            ? {
                ...swiglu(`${p}mlp.shared_expert.`, sharedWidth),
                gateScore: w.matrix(`${p}mlp.shared_expert_gate.weight`, 1, c.hiddenSize),
              }
            : null,
      });
    }
    const ffWidth = Math.max(
      this.layers.some((l) => l.mlp) ? c.intermediateSize : 0,
      this.layers.some((l) => l.shared) ? (c.sharedExpertIntermediateSize ?? 0) : 0,
    );
    this.scratch = new Scratch(c, ffWidth);
    this.gdn = this.la ? new GdnScratch(this.la) : null;
    this.moeScratch = c.numExperts && c.numExpertsPerTok ? new MoeScratch(c.numExperts, c.numExpertsPerTok) : null;
    if (this.la) this.createRecurrentState = (numSlots) => this.newState(numSlots);
  }

  /** Present when some layer is linear attention (set in the constructor). */
  createRecurrentState?: (numSlots: number) => RecurrentState;

  private newState(numSlots: number): LinearAttentionState {
    if (!this.la) throw new Error('no recurrent layers');
    return new LinearAttentionState(
      numSlots,
      this.la,
      this.layers.map((l) => l.linear !== null),
    );
  }

  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions, state?: RecurrentState): Float32Array {
    const c = this.config;
    const ops = this.ops;
    const n = batch.tokens.length;
    const recurrent = this.checkBatch(batch, kv, state);
    const s = this.scratch;
    s.ensure(n);
    this.moeScratch?.ensure(n);
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
      const layer = this.layers[l];
      ops.rmsnorm(s.hidden, n, hs, layer.inputNorm, c.rmsNormEps, s.normed);
      if (layer.linear && this.la && this.gdn && recurrent) {
        const layerState = recurrent.state.layers[l];
        if (!layerState) throw new Error(`recurrent state has no slot storage for layer ${l}`);
        runGatedDeltaNet(ops, c, this.la, layer.linear, this.gdn, s.normed, n, recurrent.seqs, layerState, s.proj);
      } else if (layer.attention) {
        this.attention(layer.attention, n, batch, kv[l]);
      }
      ops.add(s.hidden, s.proj, s.hidden, n * hs);
      ops.rmsnorm(s.hidden, n, hs, layer.postNorm, c.rmsNormEps, s.normed);
      this.feedForward(layer, n);
      ops.add(s.hidden, s.proj, s.hidden, n * hs);
      onHidden?.(l + 1, s.hidden.subarray(0, n * hs));
    }
    return this.logits(batch.logitRows, options?.head);
  }

  /** Gated full attention over s.normed into s.proj. */
  private attention(w: AttentionWeights, n: number, batch: ForwardBatch, kv: KvLayer): void {
    const c = this.config;
    const ops = this.ops;
    const s = this.scratch;
    const hd = c.headDim;
    const heads = c.numHeads;
    ops.matmul(s.normed, n, w.qGate, s.qGate);
    // Per head: hd query values, then hd gate values.
    for (let r = 0; r < n * heads; r++) {
      s.q.set(s.qGate.subarray(2 * r * hd, (2 * r + 1) * hd), r * hd);
      s.gate.set(s.qGate.subarray((2 * r + 1) * hd, (2 * r + 2) * hd), r * hd);
    }
    ops.matmul(s.normed, n, w.k, s.k);
    ops.matmul(s.normed, n, w.v, s.v);
    ops.rmsnorm(s.q, n * heads, hd, w.qNorm, c.rmsNormEps, s.q);
    ops.rmsnorm(s.k, n * c.numKvHeads, hd, w.kNorm, c.rmsNormEps, s.k);
    this.partialRope(s.q, n, heads, batch.positions);
    this.partialRope(s.k, n, c.numKvHeads, batch.positions);
    ops.storeKv(kv, s.k, s.v, n, batch.slots);
    ops.attention(s.q, kv, batch.seqs, { numHeads: heads, scale: 1 / Math.sqrt(hd), slidingWindow: null }, s.attn);
    for (let i = 0; i < n * heads * hd; i++) s.attn[i] = s.attn[i] / (1 + Math.exp(-s.gate[i]));
    ops.matmul(s.attn, n, w.o, s.proj);
  }

  /** Neox RoPE on the first rotaryDim values of each head (all of it without partial rotary). */
  private partialRope(x: Float32Array, n: number, heads: number, positions: Int32Array): void {
    const c = this.config;
    const hd = c.headDim;
    const rd = c.rotaryDim ?? hd;
    if (rd === hd) {
      this.ops.rope(x, n, heads, hd, positions, c.ropeTheta, 'neox');
      return;
    }
    const rot = this.scratch.rot;
    for (let r = 0; r < n * heads; r++) rot.set(x.subarray(r * hd, r * hd + rd), r * rd);
    this.ops.rope(rot, n, heads, rd, positions, c.ropeTheta, 'neox');
    for (let r = 0; r < n * heads; r++) x.set(rot.subarray(r * rd, (r + 1) * rd), r * hd);
  }

  /** The dense MLP, or the routed experts plus the gated shared expert, over s.normed into s.proj. */
  private feedForward(layer: Qwen35Layer, n: number): void {
    const ops = this.ops;
    const s = this.scratch;
    const hs = this.config.hiddenSize;
    const swiglu = (m: SwiGlu, out: Float32Array): void => {
      ops.matmul(s.normed, n, m.gate, s.ffGate);
      ops.matmul(s.normed, n, m.up, s.ffUp);
      ops.siluMul(s.ffGate, s.ffUp, s.ffGate, n * m.gate.rows);
      ops.matmul(s.ffGate, n, m.down, out);
    };
    if (layer.mlp) {
      swiglu(layer.mlp, s.proj);
      return;
    }
    if (!layer.moe || !this.moeScratch) throw new Error('a MoE layer without its experts');
    layer.moe.run(ops, s.normed, n, s.proj, this.moeScratch);
    if (!layer.shared) return;
    // proj += sigmoid(shared_expert_gate · x) · shared_expert(x); s.attn is free here.
    const sharedOut = s.attn;
    swiglu(layer.shared, sharedOut);
    ops.matmul(s.normed, n, layer.shared.gateScore, s.score);
    for (let i = 0; i < n; i++) {
      const g = 1 / (1 + Math.exp(-s.score[i]));
      for (let d = 0; d < hs; d++) s.proj[i * hs + d] += g * sharedOut[i * hs + d];
    }
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

  /** Checks the batch; for a model with recurrent layers, its state and each sequence's slot. */
  private checkBatch(
    batch: ForwardBatch,
    kv: KvLayer[],
    state: RecurrentState | undefined,
  ): { state: LinearAttentionState; seqs: RecurrentSeq[] } | null {
    const n = batch.tokens.length;
    if (batch.positions.length !== n || batch.slots.length !== n) {
      throw new Error(`forward: ${n} tokens but ${batch.positions.length} positions and ${batch.slots.length} slots`);
    }
    if (kv.length !== this.config.numLayers) throw new Error(`forward: ${kv.length} KV layers for a ${this.config.numLayers}-layer model`);
    for (const r of batch.logitRows) if (r < 0 || r >= n) throw new Error(`forward: logit row ${r} outside the ${n}-token batch`);
    if (batch.inputEmbeddings) throw new Error(`forward: ${this.config.architecture} runs text only (no input embeddings)`);
    if (batch.mropePositions) throw new Error(`forward: ${this.config.architecture} runs text only (no M-RoPE positions)`);
    if (!this.la) return null;
    if (!(state instanceof LinearAttentionState))
      throw new Error('forward: this model has recurrent layers: pass its createRecurrentState() state');
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

const options = (): DecoderOptions => ({ qkvBias: 'none', oBiasIfPresent: false, qkNorm: true, slidingWindow: null });

export const qwen35: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  hfConfig: qwen35Config,
  ggufConfig: qwen35GgufConfig,
  // Its layers are not the shared decoder layer's; these describe its attention for callers that ask.
  decoderOptions: options,
  create: (checkpoint, ops) => new Qwen35Model(checkpoint, ops),
};

export const qwen35Moe: ArchitectureModule = {
  ...qwen35,
  // transformers' Qwen3.5-MoE router always renormalises the top-k weights.
  experts: { hfWidthKey: 'moe_intermediate_size', normTopkProb: 'always' },
  create: (checkpoint, ops, placement) => new Qwen35Model(checkpoint, ops, placement),
};
