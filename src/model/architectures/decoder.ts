// The pre-norm decoder-only transformer shared by the Llama family (Llama, SmolLM2, Mistral, Qwen2,
// Qwen3, Qwen2-VL's language model, and the MoE ones: Mixtral, Qwen3-MoE):
// embed → N × [RMSNorm → GQA attention with neox RoPE → residual → RMSNorm → feed-forward → residual]
// → final RMSNorm → lm_head. Architectures differ only in the DecoderOptions they pass; a layer's
// feed-forward block is the dense SwiGLU MLP, or routed experts where config.moeLayers says so.
// Gemma 2 / 3 and OLMo 2 run here too, through options the Llama family leaves at their defaults
// (norm placement and offset, embedding scale, attention scale and soft-cap, final logit soft-cap,
// per-layer sliding window and RoPE, GELU-gated MLP: decoder-layer.ts).
// Vision models' image rows take their embeddings in place of the token's (batch.inputEmbeddings),
// and Qwen2-VL's rows may carry M-RoPE positions (batch.mropePositions).
import type { KvLayer, Ops, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import type { ForwardBatch, ForwardOptions, InputEmbeddings, Model, OutputHead } from './model.js';
import { CheckpointWeights } from './weights.js';
import {
  DecoderScratch,
  loadDecoderLayer,
  loadNormWeight,
  runDecoderLayer,
  scaleRows,
  type DecoderLayerWeights,
  type DecoderOptions,
} from './decoder-layer.js';
import type { ModelOptions } from './expert-placement.js';
import { loadMoeBlock } from './moe.js';
import { bf16OutputHead, selectedRowLogits } from './output-head.js';

export type { DecoderOptions } from './decoder-layer.js';

export class DecoderTransformer implements Model {
  readonly config: ModelConfig;
  private readonly embedTokens: WeightMatrix;
  private readonly lmHead: WeightMatrix;
  private readonly finalNorm: Float32Array;
  private readonly layers: DecoderLayerWeights[];
  private readonly scratch: DecoderScratch;
  /** Rows of the last forward (lastHidden). */
  private lastRows = 0;

  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    private readonly options: DecoderOptions,
    placement?: ModelOptions,
  ) {
    const c = checkpoint.config;
    this.config = c;
    if (c.numHeads % c.numKvHeads !== 0) throw new Error(`numHeads ${c.numHeads} is not a multiple of numKvHeads ${c.numKvHeads}`);
    if (c.headDim % 2 !== 0) throw new Error(`headDim ${c.headDim} must be even for RoPE`);
    const w = new CheckpointWeights(checkpoint, ops);
    this.embedTokens = w.matrix('model.embed_tokens.weight', c.vocabSize, c.hiddenSize);
    // Tied embeddings reuse the (already prepared) embedding table as lm_head.
    this.lmHead = c.tieWordEmbeddings ? this.embedTokens : w.matrix('lm_head.weight', c.vocabSize, c.hiddenSize);
    this.finalNorm = loadNormWeight(w, options, 'model.norm.weight', c.hiddenSize);
    this.layers = [];
    for (let i = 0; i < c.numLayers; i++) {
      const prefix = `model.layers.${i}.`;
      const moe = c.moeLayers?.[i] ? (options.loadMoe ?? loadMoeBlock)(w, c, i, prefix, placement?.experts) : undefined;
      this.layers.push(loadDecoderLayer(w, c, options, prefix, moe, i));
    }
    // Dense activations only where some layer is dense (a MoE model's intermediate_size can be wide).
    this.scratch = new DecoderScratch(c, this.layers.some((l) => l.mlp.kind === 'dense') ? c.intermediateSize : 0);
  }

  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions): Float32Array {
    const c = this.config;
    const ops = this.ops;
    const n = batch.tokens.length;
    this.checkBatch(batch, kv);
    const s = this.scratch;
    s.ensure(n);
    this.lastRows = n;
    const skip = options?.skipLayers;
    const onHidden = options?.onHidden;
    ops.embed(batch.tokens, this.embedTokens, s.hidden);
    const embedScale = this.options.embeddingScale ?? 1;
    if (embedScale !== 1) for (let i = 0; i < n * c.hiddenSize; i++) s.hidden[i] *= embedScale;
    if (batch.inputEmbeddings) this.overwriteInputs(batch.inputEmbeddings);
    // Granite scales the input embeddings, image rows' included (HF multiplies inputs_embeds).
    if (this.options.embeddingMultiplier !== undefined) scaleRows(s.hidden, n * c.hiddenSize, this.options.embeddingMultiplier);
    onHidden?.(0, s.hidden.subarray(0, n * c.hiddenSize));
    for (let l = 0; l < c.numLayers; l++) {
      if (skip?.has(l)) continue;
      runDecoderLayer(ops, c, this.options, this.layers[l], s, n, batch, kv[l]);
      onHidden?.(l + 1, s.hidden.subarray(0, n * c.hiddenSize));
    }
    return this.logits(batch.logitRows, options?.head);
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

  /** Final norm and lm_head (or `head`) on the requested rows only: lm_head is the largest matmul (vocab × hidden). */
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
    const divisor = this.options.logitsScaling;
    if (divisor !== undefined) for (let i = 0; i < logits.length; i++) logits[i] /= divisor;
    const cap = this.options.finalSoftcap;
    if (cap) this.ops.softcap(logits, logits, logits.length, cap);
    return logits;
  }

  /** Image rows take their embeddings in place of their (placeholder) tokens'. */
  private overwriteInputs({ rows, values }: InputEmbeddings): void {
    const h = this.config.hiddenSize;
    const hidden = this.scratch.hidden;
    for (let i = 0; i < rows.length; i++) {
      const to = rows[i] * h;
      const from = i * h;
      for (let d = 0; d < h; d++) hidden[to + d] = values[from + d];
    }
  }

  private checkBatch(batch: ForwardBatch, kv: KvLayer[]): void {
    const n = batch.tokens.length;
    if (batch.positions.length !== n || batch.slots.length !== n) {
      throw new Error(`forward: ${n} tokens but ${batch.positions.length} positions and ${batch.slots.length} slots`);
    }
    if (kv.length !== this.config.numLayers) throw new Error(`forward: ${kv.length} KV layers for a ${this.config.numLayers}-layer model`);
    if (batch.logitRows.length > n) throw new Error(`forward: ${batch.logitRows.length} logit rows for ${n} tokens`);
    for (const r of batch.logitRows) if (r < 0 || r >= n) throw new Error(`forward: logit row ${r} outside the ${n}-token batch`);
    const inputs = batch.inputEmbeddings;
    if (inputs) {
      if (inputs.values.length !== inputs.rows.length * this.config.hiddenSize) {
        throw new Error(`forward: ${inputs.values.length} input embedding values for ${inputs.rows.length} rows`);
      }
      for (const r of inputs.rows) if (r < 0 || r >= n) throw new Error(`forward: input embedding row ${r} outside the ${n}-token batch`);
    }
    const mrope = batch.mropePositions;
    if (mrope) {
      const sections = this.options.mropeSection;
      if (!sections) throw new Error(`forward: M-RoPE positions for a ${this.config.architecture} model, which has no M-RoPE`);
      if (mrope.length !== sections.length * n) throw new Error(`forward: ${mrope.length} M-RoPE positions for ${n} tokens`);
    }
  }
}
