// The pre-norm decoder-only transformer shared by the Llama family (Llama, SmolLM2, Mistral, Qwen2, Qwen3):
// embed → N × [RMSNorm → GQA attention with neox RoPE → residual → RMSNorm → SwiGLU MLP → residual]
// → final RMSNorm → lm_head. Architectures differ only in the DecoderOptions they pass.
import type { KvLayer, Ops, WeightMatrix } from '../../kernels/ops.js';
import { f32ToBf16 } from '../../kernels/dequant.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import type { ForwardBatch, ForwardOptions, Model, OutputHead } from './model.js';
import { CheckpointWeights } from './weights.js';

export interface DecoderOptions {
  /** Biases on q/k/v projections: 'required' (Qwen2), 'none', or 'if-present' (Llama's attention_bias). */
  qkvBias: 'required' | 'none' | 'if-present';
  /** Bias on o_proj when present in the checkpoint (Llama with attention_bias). */
  oBiasIfPresent: boolean;
  /** Per-head RMSNorm of q and k before RoPE (Qwen3). */
  qkNorm: boolean;
  /** Keys older than this many positions are masked (Mistral); null = full causal attention. */
  slidingWindow: number | null;
}

interface LayerWeights {
  inputNorm: Float32Array;
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
  postNorm: Float32Array;
  gate: WeightMatrix;
  up: WeightMatrix;
  down: WeightMatrix;
}

/** Activation buffers sized for the largest batch seen so far, reused by every layer and step. */
class Scratch {
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

  constructor(private readonly config: ModelConfig) {}

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
    this.gate = new Float32Array(cap * c.intermediateSize);
    this.up = new Float32Array(cap * c.intermediateSize);
    this.capacity = cap;
  }
}

export class DecoderTransformer implements Model {
  readonly config: ModelConfig;
  private readonly embedTokens: WeightMatrix;
  private readonly lmHead: WeightMatrix;
  private readonly finalNorm: Float32Array;
  private readonly layers: LayerWeights[];
  private readonly scratch: Scratch;
  /** Rows of the last forward (lastHidden). */
  private lastRows = 0;

  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    private readonly options: DecoderOptions,
  ) {
    const c = checkpoint.config;
    this.config = c;
    if (c.numHeads % c.numKvHeads !== 0) throw new Error(`numHeads ${c.numHeads} is not a multiple of numKvHeads ${c.numKvHeads}`);
    if (c.headDim % 2 !== 0) throw new Error(`headDim ${c.headDim} must be even for RoPE`);
    const w = new CheckpointWeights(checkpoint, ops);
    this.embedTokens = w.matrix('model.embed_tokens.weight', c.vocabSize, c.hiddenSize);
    // Tied embeddings reuse the (already prepared) embedding table as lm_head.
    this.lmHead = c.tieWordEmbeddings ? this.embedTokens : w.matrix('lm_head.weight', c.vocabSize, c.hiddenSize);
    this.finalNorm = w.vector('model.norm.weight', c.hiddenSize);
    this.layers = [];
    for (let i = 0; i < c.numLayers; i++) this.layers.push(this.loadLayer(w, i));
    this.scratch = new Scratch(c);
  }

  private loadLayer(w: CheckpointWeights, i: number): LayerWeights {
    const c = this.config;
    const p = `model.layers.${i}.`;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const bias = (name: string, len: number): Float32Array | undefined => {
      switch (this.options.qkvBias) {
        case 'required':
          return w.vector(name, len);
        case 'if-present':
          return w.optionalVector(name, len);
        case 'none':
          return undefined;
      }
    };
    return {
      inputNorm: w.vector(`${p}input_layernorm.weight`, c.hiddenSize),
      q: w.matrix(`${p}self_attn.q_proj.weight`, qWidth, c.hiddenSize),
      k: w.matrix(`${p}self_attn.k_proj.weight`, kvWidth, c.hiddenSize),
      v: w.matrix(`${p}self_attn.v_proj.weight`, kvWidth, c.hiddenSize),
      o: w.matrix(`${p}self_attn.o_proj.weight`, c.hiddenSize, qWidth),
      qBias: bias(`${p}self_attn.q_proj.bias`, qWidth),
      kBias: bias(`${p}self_attn.k_proj.bias`, kvWidth),
      vBias: bias(`${p}self_attn.v_proj.bias`, kvWidth),
      oBias: this.options.oBiasIfPresent ? w.optionalVector(`${p}self_attn.o_proj.bias`, c.hiddenSize) : undefined,
      qNorm: this.options.qkNorm ? w.vector(`${p}self_attn.q_norm.weight`, c.headDim) : undefined,
      kNorm: this.options.qkNorm ? w.vector(`${p}self_attn.k_norm.weight`, c.headDim) : undefined,
      postNorm: w.vector(`${p}post_attention_layernorm.weight`, c.hiddenSize),
      gate: w.matrix(`${p}mlp.gate_proj.weight`, c.intermediateSize, c.hiddenSize),
      up: w.matrix(`${p}mlp.up_proj.weight`, c.intermediateSize, c.hiddenSize),
      down: w.matrix(`${p}mlp.down_proj.weight`, c.hiddenSize, c.intermediateSize),
    };
  }

  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions): Float32Array {
    const c = this.config;
    const ops = this.ops;
    const n = batch.tokens.length;
    this.checkBatch(batch, kv);
    const s = this.scratch;
    s.ensure(n);
    this.lastRows = n;
    const hidden = s.hidden;
    const attentionParams = { numHeads: c.numHeads, scale: 1 / Math.sqrt(c.headDim), slidingWindow: this.options.slidingWindow };

    const skip = options?.skipLayers;
    const onHidden = options?.onHidden;
    ops.embed(batch.tokens, this.embedTokens, hidden);
    onHidden?.(0, hidden.subarray(0, n * c.hiddenSize));
    for (let l = 0; l < c.numLayers; l++) {
      if (skip?.has(l)) continue;
      const w = this.layers[l];
      // Attention block.
      ops.rmsnorm(hidden, n, c.hiddenSize, w.inputNorm, c.rmsNormEps, s.normed);
      ops.matmul(s.normed, n, w.q, s.q, w.qBias);
      ops.matmul(s.normed, n, w.k, s.k, w.kBias);
      ops.matmul(s.normed, n, w.v, s.v, w.vBias);
      if (w.qNorm && w.kNorm) {
        ops.rmsnorm(s.q, n * c.numHeads, c.headDim, w.qNorm, c.rmsNormEps, s.q);
        ops.rmsnorm(s.k, n * c.numKvHeads, c.headDim, w.kNorm, c.rmsNormEps, s.k);
      }
      ops.rope(s.q, n, c.numHeads, c.headDim, batch.positions, c.ropeTheta, 'neox');
      ops.rope(s.k, n, c.numKvHeads, c.headDim, batch.positions, c.ropeTheta, 'neox');
      ops.storeKv(kv[l], s.k, s.v, n, batch.slots);
      ops.attention(s.q, kv[l], batch.seqs, attentionParams, s.attn);
      ops.matmul(s.attn, n, w.o, s.proj, w.oBias);
      ops.add(hidden, s.proj, hidden, n * c.hiddenSize);
      // MLP block (SwiGLU).
      ops.rmsnorm(hidden, n, c.hiddenSize, w.postNorm, c.rmsNormEps, s.normed);
      ops.matmul(s.normed, n, w.gate, s.gate);
      ops.matmul(s.normed, n, w.up, s.up);
      ops.siluMul(s.gate, s.up, s.gate, n * c.intermediateSize);
      ops.matmul(s.gate, n, w.down, s.proj);
      ops.add(hidden, s.proj, hidden, n * c.hiddenSize);
      onHidden?.(l + 1, hidden.subarray(0, n * c.hiddenSize));
    }
    return this.logits(batch.logitRows, options?.head);
  }

  outputRows(ids: Int32Array, out: Float32Array): void {
    this.ops.embed(ids, this.lmHead, out);
  }

  outputHead(ids: Int32Array): OutputHead {
    const h = this.config.hiddenSize;
    const rows = new Float32Array(ids.length * h);
    this.outputRows(ids, rows);
    // bf16 halves the bytes a draft step reads; drafts need the argmax, not every bit.
    const bits = new Uint16Array(rows.length);
    for (let i = 0; i < rows.length; i++) bits[i] = f32ToBf16(rows[i]);
    const weight = this.ops.prepareWeight({ dtype: 'bf16', rows: ids.length, cols: h, data: new Uint8Array(bits.buffer) });
    return { ids: Int32Array.from(ids), weight };
  }

  lastHidden(): Float32Array {
    return this.scratch.hidden.subarray(0, this.lastRows * this.config.hiddenSize);
  }

  /** Final norm and lm_head (or `head`) on the requested rows only: lm_head is the largest matmul (vocab × hidden). */
  private logits(rows: Int32Array, head?: OutputHead): Float32Array {
    const c = this.config;
    const s = this.scratch;
    const m = rows.length;
    // s.normed holds at least as many rows as the batch, and m ≤ batch rows.
    for (let i = 0; i < m; i++) s.normed.set(s.hidden.subarray(rows[i] * c.hiddenSize, (rows[i] + 1) * c.hiddenSize), i * c.hiddenSize);
    this.ops.rmsnorm(s.normed, m, c.hiddenSize, this.finalNorm, c.rmsNormEps, s.normed);
    const w = head?.weight ?? this.lmHead;
    const logits = new Float32Array(m * w.rows);
    this.ops.matmul(s.normed, m, w, logits);
    return logits;
  }

  private checkBatch(batch: ForwardBatch, kv: KvLayer[]): void {
    const n = batch.tokens.length;
    if (batch.positions.length !== n || batch.slots.length !== n) {
      throw new Error(`forward: ${n} tokens but ${batch.positions.length} positions and ${batch.slots.length} slots`);
    }
    if (kv.length !== this.config.numLayers) throw new Error(`forward: ${kv.length} KV layers for a ${this.config.numLayers}-layer model`);
    if (batch.logitRows.length > n) throw new Error(`forward: ${batch.logitRows.length} logit rows for ${n} tokens`);
    for (const r of batch.logitRows) if (r < 0 || r >= n) throw new Error(`forward: logit row ${r} outside the ${n}-token batch`);
  }
}
