// One pre-norm decoder layer of the Llama family, shared by the main stack (decoder.ts) and the
// multi-token-prediction layer (mtp.ts), which is the same layer fed another input:
// RMSNorm → GQA attention with neox RoPE (or Qwen2-VL's M-RoPE) over the paged KV → residual → RMSNorm →
// feed-forward → residual.
// The feed-forward block is a dense SwiGLU MLP, or a MoE layer's routed experts (moe.ts).
// Options the Llama family leaves at their defaults give Gemma 2 / 3 (norms on both sides of each
// sublayer, (1 + w) norm weights, a GELU-gated MLP, soft-capped attention, per-layer sliding window and
// RoPE base) and OLMo 2 (norms on the sublayer outputs only, q/k norms over whole projections).
import {
  matmulParts,
  type AttentionSeq,
  type GeluKind,
  type KvLayer,
  type Ops,
  type RopeFrequencies,
  type WeightMatrix,
} from '../../kernels/ops.js';
import type { ModelConfig } from '../types.js';
import { MoeScratch, type MoeBlock } from './moe.js';
import { applyRotary, linearRopeInvFreq, type RotaryOptions } from './rotary.js';
import type { CheckpointWeights } from './weights.js';
import type { ModelOptions } from './expert-placement.js';

export interface DecoderOptions {
  /** Biases on q/k/v projections: 'required' (Qwen2), 'none', or 'if-present' (Llama's attention_bias). */
  qkvBias: 'required' | 'none' | 'if-present';
  /** Bias on o_proj when present in the checkpoint (Llama with attention_bias). */
  oBiasIfPresent: boolean;
  /** Per-head RMSNorm of q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  /** Keys older than this many positions are masked (Mistral); null = full causal attention. */
  slidingWindow: number | null;
  /**
   * Multimodal RoPE (Qwen2-VL): the split of the rotary frequencies among temporal / height / width
   * positions (config.mropeSection), used for rows given M-RoPE positions. Absent: RoPE only.
   */
  mropeSection?: Int32Array;
  /** Partial rotary and LongRoPE (Phi-3; rotary.ts). Absent: neox RoPE over the whole head at ropeTheta. */
  rotary?: RotaryOptions;
  /** The attention softmax scale, in place of headDim^-0.5 (Granite's attention_multiplier, Gemma's query_pre_attn_scalar^-0.5). */
  attentionScale?: number;
  /** Each sublayer's output (attention, feed-forward) is multiplied by this before its residual add (Granite). */
  residualMultiplier?: number;
  /** Token embeddings are multiplied by this (Granite's embedding_multiplier; decoder.ts). */
  embeddingMultiplier?: number;
  /** Logits are divided by this (Granite's logits_scaling; decoder.ts). */
  logitsScaling?: number;
  /**
   * Where the RMSNorms sit (default 'pre'):
   *  - 'pre' (Llama): x += attn(input_layernorm(x)); x += mlp(post_attention_layernorm(x)).
   *  - 'sandwich' (Gemma 2 / 3): x += post_attention_layernorm(attn(input_layernorm(x)));
   *    x += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))).
   *  - 'post' (OLMo 2): x += post_attention_layernorm(attn(x)); x += post_feedforward_layernorm(mlp(x)).
   */
  normPlacement?: 'pre' | 'sandwich' | 'post';
  /**
   * Added to every RMSNorm weight at load (Gemma: 1, its norms scale by 1 + w, computed in f32 as
   * HF does); the final norm and q/k norms too. Default 0.
   */
  normWeightOffset?: number;
  /** q/k norm over each head's headDim values (Qwen3, Gemma 3; the default) or over the whole projection (OLMo 2). */
  qkNormOver?: 'head' | 'all';
  /** Multiplies the token embeddings (Gemma: sqrt(hidden_size), rounded to f32 as HF casts it). Default 1. */
  embeddingScale?: number;
  /** Attention logit soft-cap (Gemma 2 attn_logit_softcapping); null / absent: none. */
  attentionSoftcap?: number | null;
  /** Final logit soft-cap (Gemma 2 final_logit_softcapping): logits = cap · tanh(logits / cap); null / absent: none. */
  finalSoftcap?: number | null;
  /** Per layer: its sliding window (null = full attention), overriding slidingWindow (Gemma's layer_types). */
  layerSlidingWindow?: readonly (number | null)[];
  /** Per layer: its RoPE base and linear scaling factor (Gemma 3: local vs global layers). Default config.ropeTheta, 1. */
  layerRope?: readonly { theta: number; linearFactor: number }[];
  /** The dense MLP's gate activation: SwiGLU's silu (default), or a GELU (Gemma: 'tanh', gelu_pytorch_tanh). */
  mlpActivation?: 'silu' | GeluKind;
  /** Every layer's RoPE frequencies (GPT-OSS's YaRN: yarn.ts), for ops.rope; absent: plain RoPE (or layerRope's). */
  ropeFrequencies?: RopeFrequencies;
  /** Attention sinks: each layer's self_attn.sinks [numHeads] joins its softmax (GPT-OSS; AttentionParams.sinks). */
  attentionSinks?: boolean;
  /**
   * Loads a MoE layer's block in place of loadMoeBlock (GPT-OSS: transposed, interleaved experts with
   * biases; gpt-oss.ts). Called by the main stack for the layers config.moeLayers marks.
   */
  loadMoe?: (w: CheckpointWeights, c: ModelConfig, layer: number, prefix: string, placement?: ModelOptions['experts']) => MoeBlock;
}

export interface DecoderLayerWeights {
  /** Before attention (input_layernorm); absent with normPlacement 'post'. */
  inputNorm?: Float32Array;
  q: WeightMatrix;
  k: WeightMatrix;
  v: WeightMatrix;
  o: WeightMatrix;
  qBias?: Float32Array;
  kBias?: Float32Array;
  vBias?: Float32Array;
  oBias?: Float32Array;
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  /** Before the feed-forward block (Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm); absent with 'post'. */
  postNorm?: Float32Array;
  /** On the attention output before the residual add ('sandwich' and 'post': post_attention_layernorm). */
  attnOutNorm?: Float32Array;
  /** On the feed-forward output before the residual add ('sandwich' and 'post': post_feedforward_layernorm). */
  ffnOutNorm?: Float32Array;
  /** This layer's sliding window (null: full attention) and RoPE. */
  slidingWindow: number | null;
  ropeTheta: number;
  /** Linear-scaled inverse frequencies (Gemma 3's global layers' rope_scaling), or YaRN's; absent: plain RoPE at ropeTheta. */
  ropeFreqs?: RopeFrequencies;
  /** Attention sink logits [numHeads] (GPT-OSS); absent: none. */
  sinks?: Float32Array;
  mlp: FeedForward;
}

/** The dense SwiGLU MLP: down(silu(gate·x) ⊙ up·x). */
export interface DenseMlp {
  readonly kind: 'dense';
  readonly gate: WeightMatrix;
  readonly up: WeightMatrix;
  readonly down: WeightMatrix;
}

/** A layer's feed-forward block. */
export type FeedForward = DenseMlp | MoeBlock;

/** The rows a layer runs: where each sits, where its k/v go, and each sequence's share. */
export interface LayerRows {
  positions: Int32Array;
  /** [3, rows] M-RoPE positions (ForwardBatch.mropePositions); absent: all three are `positions`. */
  mropePositions?: Int32Array;
  slots: Int32Array;
  seqs: AttentionSeq[];
}

/** Activation buffers sized for the largest batch seen so far, reused by every layer and step. */
export class DecoderScratch {
  capacity = 0;
  hidden = new Float32Array(0);
  normed = new Float32Array(0);
  q = new Float32Array(0);
  k = new Float32Array(0);
  v = new Float32Array(0);
  attn = new Float32Array(0);
  proj = new Float32Array(0);
  gate = new Float32Array(0);
  up = new Float32Array(0);
  /** Routing buffers, for a model with MoE layers. */
  readonly moe: MoeScratch | null;

  /** denseWidth: the dense MLPs' width (0 when every layer is MoE: no dense activations to hold). */
  constructor(
    private readonly config: ModelConfig,
    private readonly denseWidth = config.intermediateSize,
  ) {
    const { numExperts, numExpertsPerTok } = config;
    this.moe =
      numExperts && numExpertsPerTok
        ? new MoeScratch(numExperts, numExpertsPerTok, config.sharedExpertIntermediateSize ?? 0, config.hiddenSize)
        : null;
  }

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    // Grow geometrically so a run of slightly larger batches does not reallocate every step.
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const c = this.config;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    this.hidden = new Float32Array(cap * c.hiddenSize);
    this.normed = new Float32Array(cap * c.hiddenSize);
    this.q = new Float32Array(cap * qWidth);
    this.k = new Float32Array(cap * kvWidth);
    this.v = new Float32Array(cap * kvWidth);
    this.attn = new Float32Array(cap * qWidth);
    this.proj = new Float32Array(cap * c.hiddenSize);
    this.gate = new Float32Array(cap * this.denseWidth);
    this.up = new Float32Array(cap * this.denseWidth);
    this.moe?.ensure(cap);
    this.capacity = cap;
  }
}

/** An RMSNorm weight with options.normWeightOffset added (a copy: the checkpoint's tensor is left as it is). */
export function loadNormWeight(w: CheckpointWeights, options: DecoderOptions, name: string, length: number): Float32Array {
  const v = w.vector(name, length);
  const offset = options.normWeightOffset ?? 0;
  return offset === 0 ? v : Float32Array.from(v, (x) => x + offset);
}

/**
 * The weights of the layer whose tensors are named `${prefix}input_layernorm.weight` and so on;
 * its feed-forward block is `moe` when given (loaded by the caller), else the dense MLP. `layer`
 * picks its entry of the per-layer options (an MTP layer, past the main stack, takes the defaults).
 */
export function loadDecoderLayer(
  w: CheckpointWeights,
  c: ModelConfig,
  options: DecoderOptions,
  prefix: string,
  moe?: MoeBlock,
  layer = -1,
): DecoderLayerWeights {
  const p = prefix;
  const norm = (name: string, len = c.hiddenSize): Float32Array => loadNormWeight(w, options, `${p}${name}.weight`, len);
  const placement = options.normPlacement ?? 'pre';
  const qkNormLen = (width: number): number => (options.qkNormOver === 'all' ? width : c.headDim);
  const rope = options.layerRope?.[layer];
  const window = options.layerSlidingWindow?.[layer];
  const qWidth = c.numHeads * c.headDim;
  const kvWidth = c.numKvHeads * c.headDim;
  const bias = (name: string, len: number): Float32Array | undefined => {
    switch (options.qkvBias) {
      case 'required':
        return w.vector(name, len);
      case 'if-present':
        return w.optionalVector(name, len);
      case 'none':
        return undefined;
    }
  };
  // Phi-3 fuses q/k/v into qkv_proj and gate/up into gate_up_proj (gate rows first): their row
  // blocks are taken as matrices of their own, without copying.
  const qkvName = `${p}self_attn.qkv_proj.weight`;
  const [q, k, v] =
    !w.has(`${p}self_attn.q_proj.weight`) && w.has(qkvName)
      ? w.rowBlocks(qkvName, c.hiddenSize, [qWidth, kvWidth, kvWidth])
      : [
          w.matrix(`${p}self_attn.q_proj.weight`, qWidth, c.hiddenSize),
          w.matrix(`${p}self_attn.k_proj.weight`, kvWidth, c.hiddenSize),
          w.matrix(`${p}self_attn.v_proj.weight`, kvWidth, c.hiddenSize),
        ];
  return {
    inputNorm: placement === 'post' ? undefined : norm('input_layernorm'),
    q,
    k,
    v,
    o: w.matrix(`${p}self_attn.o_proj.weight`, c.hiddenSize, qWidth),
    qBias: bias(`${p}self_attn.q_proj.bias`, qWidth),
    kBias: bias(`${p}self_attn.k_proj.bias`, kvWidth),
    vBias: bias(`${p}self_attn.v_proj.bias`, kvWidth),
    oBias: options.oBiasIfPresent ? w.optionalVector(`${p}self_attn.o_proj.bias`, c.hiddenSize) : undefined,
    qNorm: options.qkNorm ? norm('self_attn.q_norm', qkNormLen(qWidth)) : undefined,
    kNorm: options.qkNorm ? norm('self_attn.k_norm', qkNormLen(kvWidth)) : undefined,
    postNorm:
      placement === 'pre' ? norm('post_attention_layernorm') : placement === 'sandwich' ? norm('pre_feedforward_layernorm') : undefined,
    attnOutNorm: placement === 'pre' ? undefined : norm('post_attention_layernorm'),
    ffnOutNorm: placement === 'pre' ? undefined : norm('post_feedforward_layernorm'),
    slidingWindow: window === undefined ? options.slidingWindow : window,
    ropeTheta: rope?.theta ?? c.ropeTheta,
    ...(rope && rope.linearFactor !== 1 ? { ropeFreqs: { invFreq: linearRopeInvFreq(c.headDim, rope.theta, rope.linearFactor) } } : {}),
    ...(options.ropeFrequencies ? { ropeFreqs: options.ropeFrequencies } : {}),
    ...(options.attentionSinks ? { sinks: w.vector(`${p}self_attn.sinks`, c.numHeads) } : {}),
    mlp: moe ?? loadDenseMlp(w, c, p),
  };
}

/** The dense SwiGLU MLP under `${p}mlp.`: gate_proj / up_proj / down_proj, or fused gate_up_proj (gate rows, then up rows). */
function loadDenseMlp(w: CheckpointWeights, c: ModelConfig, p: string): DenseMlp {
  const fused = `${p}mlp.gate_up_proj.weight`;
  const [gate, up] =
    !w.has(`${p}mlp.gate_proj.weight`) && w.has(fused)
      ? w.rowBlocks(fused, c.hiddenSize, [c.intermediateSize, c.intermediateSize])
      : [
          w.matrix(`${p}mlp.gate_proj.weight`, c.intermediateSize, c.hiddenSize),
          w.matrix(`${p}mlp.up_proj.weight`, c.intermediateSize, c.hiddenSize),
        ];
  return { kind: 'dense', gate, up, down: w.matrix(`${p}mlp.down_proj.weight`, c.hiddenSize, c.intermediateSize) };
}

/**
 * Runs one layer over the first `n` rows of s.hidden, in place, storing the rows' k/v into `kv`
 * at `rows.slots`. s must hold at least n rows (s.ensure).
 */
export function runDecoderLayer(
  ops: Ops,
  c: ModelConfig,
  options: DecoderOptions,
  w: DecoderLayerWeights,
  s: DecoderScratch,
  n: number,
  rows: LayerRows,
  kv: KvLayer,
): void {
  const hidden = s.hidden;
  const attentionParams = {
    numHeads: c.numHeads,
    scale: options.attentionScale ?? 1 / Math.sqrt(c.headDim),
    slidingWindow: w.slidingWindow,
    softcap: options.attentionSoftcap ?? null,
    ...(w.sinks ? { sinks: w.sinks } : {}),
  };
  const residual = options.residualMultiplier;
  // Attention block (its input normed unless the norms are on the outputs only).
  let x = hidden;
  if (w.inputNorm) {
    ops.rmsnorm(hidden, n, c.hiddenSize, w.inputNorm, c.rmsNormEps, s.normed);
    x = s.normed;
  }
  matmulParts(ops, x, n, [
    { w: w.q, y: s.q, bias: w.qBias },
    { w: w.k, y: s.k, bias: w.kBias },
    { w: w.v, y: s.v, bias: w.vBias },
  ]);
  if (w.qNorm && w.kNorm) {
    // Per head (rows of headDim), or over each token's whole projection (OLMo 2).
    const qDim = w.qNorm.length,
      kDim = w.kNorm.length;
    ops.rmsnorm(s.q, (n * c.numHeads * c.headDim) / qDim, qDim, w.qNorm, c.rmsNormEps, s.q);
    ops.rmsnorm(s.k, (n * c.numKvHeads * c.headDim) / kDim, kDim, w.kNorm, c.rmsNormEps, s.k);
  }
  const mrope = rows.mropePositions;
  if (mrope && options.mropeSection) {
    ops.ropeMulti(s.q, n, c.numHeads, c.headDim, mrope, options.mropeSection, c.ropeTheta);
    ops.ropeMulti(s.k, n, c.numKvHeads, c.headDim, mrope, options.mropeSection, c.ropeTheta);
  } else if (options.rotary) {
    applyRotary(ops, c, options.rotary, s.q, s.k, n, rows.positions, rows.seqs);
  } else {
    // Text positions are M-RoPE's with all three rows equal, which is plain neox RoPE.
    // Plain RoPE is called without frequencies, so the Llama family's calls stay as they were.
    if (w.ropeFreqs === undefined) {
      ops.rope(s.q, n, c.numHeads, c.headDim, rows.positions, w.ropeTheta, 'neox');
      ops.rope(s.k, n, c.numKvHeads, c.headDim, rows.positions, w.ropeTheta, 'neox');
    } else {
      ops.rope(s.q, n, c.numHeads, c.headDim, rows.positions, w.ropeTheta, 'neox', w.ropeFreqs);
      ops.rope(s.k, n, c.numKvHeads, c.headDim, rows.positions, w.ropeTheta, 'neox', w.ropeFreqs);
    }
  }
  ops.storeKv(kv, s.k, s.v, n, rows.slots);
  ops.attention(s.q, kv, rows.seqs, attentionParams, s.attn);
  ops.matmul(s.attn, n, w.o, s.proj, w.oBias);
  if (w.attnOutNorm) ops.rmsnorm(s.proj, n, c.hiddenSize, w.attnOutNorm, c.rmsNormEps, s.proj);
  if (residual !== undefined) scaleRows(s.proj, n * c.hiddenSize, residual);
  ops.add(hidden, s.proj, hidden, n * c.hiddenSize);
  // Feed-forward block.
  x = hidden;
  if (w.postNorm) {
    ops.rmsnorm(hidden, n, c.hiddenSize, w.postNorm, c.rmsNormEps, s.normed);
    x = s.normed;
  }
  const mlp = w.mlp;
  if (mlp.kind === 'dense') {
    matmulParts(ops, x, n, [
      { w: mlp.gate, y: s.gate },
      { w: mlp.up, y: s.up },
    ]);
    const act = options.mlpActivation ?? 'silu';
    if (act === 'silu') ops.siluMul(s.gate, s.up, s.gate, n * c.intermediateSize);
    else ops.geluMul(s.gate, s.up, s.gate, n * c.intermediateSize, act);
    ops.matmul(s.gate, n, mlp.down, s.proj);
  } else {
    if (s.moe === null) throw new Error('a MoE layer run with scratch for a dense model');
    mlp.run(ops, x, n, s.proj, s.moe);
  }
  if (w.ffnOutNorm) ops.rmsnorm(s.proj, n, c.hiddenSize, w.ffnOutNorm, c.rmsNormEps, s.proj);
  if (residual !== undefined) scaleRows(s.proj, n * c.hiddenSize, residual);
  ops.add(hidden, s.proj, hidden, n * c.hiddenSize);
}

/** x[0, len) *= factor, in f32 (an elementwise scale per layer is small beside the layer's matmuls). */
export function scaleRows(x: Float32Array, len: number, factor: number): void {
  for (let i = 0; i < len; i++) x[i] *= factor;
}
