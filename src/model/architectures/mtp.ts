// Multi-token prediction (MTP) as DeepSeek-V3, GLM-4.5 and Qwen3-Next ship it: one more decoder
// layer after the main stack. For position i it takes the main model's final hidden state h_i
// (before the final norm) and the token t_{i+1} that follows, and predicts t_{i+2}:
//   x = eh_proj([enorm(embed(t_{i+1})) ; hnorm(h_i)])    eh_proj: [hidden, 2·hidden]
//   x → one ordinary decoder layer (attention over its own KV of earlier positions, MLP)
//   logits = head(shared_head.norm(x))    head: shared_head.head, else the main lm_head
// at RoPE position i, the embedding zeroed at position 0 (vLLM's deepseek_mtp / glm4_moe_mtp).
// Applied again to its own output x and the token it drafted, it drafts the token after (vLLM,
// when more drafts are asked for than the checkpoint has MTP layers); only the first MTP layer is used.
// Weights: model.layers.{N}.{enorm, hnorm, eh_proj, shared_head.norm, shared_head.head?}.weight and
// the layer's usual self_attn.* / mlp.* / norms under model.layers.{N}., N = num_hidden_layers.
import type { DType, KvLayer, Ops, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import {
  DecoderScratch,
  loadDecoderLayer,
  runDecoderLayer,
  type DecoderLayerWeights,
  type DecoderOptions,
  type LayerRows,
} from './decoder-layer.js';
import { CheckpointWeights } from './weights.js';

/** Rows through the MTP layer: for each, the position's hidden state and the token after it. */
export interface MtpRows extends LayerRows {
  /** t_{i+1} of each row at position i. */
  tokens: Int32Array;
  /** [rows, hiddenSize]: the main model's final hidden state (before its norm), or the MTP layer's own output. */
  hidden: Float32Array;
}

/** What a checkpoint holds of multi-token prediction. */
export type MtpPresence =
  | {
      found: true;
      /** Its layer index (num_hidden_layers). */ layer: number;
      /** Distinct dtypes of its weight matrices. */ dtypes: DType[];
    }
  | { found: false; /** Why not, in words. */ reason: string };

const MATRICES = [
  'eh_proj',
  'self_attn.q_proj',
  'self_attn.k_proj',
  'self_attn.v_proj',
  'self_attn.o_proj',
  'mlp.gate_proj',
  'mlp.up_proj',
  'mlp.down_proj',
  'shared_head.head',
];

/** Whether `checkpoint` carries an MTP layer: config num_nextn_predict_layers and model.layers.N.eh_proj. */
export function findMtpWeights(checkpoint: Checkpoint): MtpPresence {
  const c = checkpoint.config;
  const layer = c.numLayers;
  if (checkpoint.format !== 'safetensors') return { found: false, reason: 'MTP layers are read from safetensors checkpoints only' };
  if (!c.numMtpLayers) return { found: false, reason: 'config.json sets no num_nextn_predict_layers' };
  const ehProj = `model.layers.${layer}.eh_proj.weight`;
  if (!checkpoint.tensors.has(ehProj)) {
    return { found: false, reason: `num_nextn_predict_layers is ${c.numMtpLayers} but there is no tensor ${ehProj}` };
  }
  const dtypes = new Set<DType>();
  for (const m of MATRICES) {
    const t = checkpoint.tensors.get(`model.layers.${layer}.${m}.weight`);
    if (t) dtypes.add(t.dtype);
  }
  return { found: true, layer, dtypes: [...dtypes] };
}

export class MtpLayer {
  readonly config: ModelConfig;
  /** Token ids the head scores: [0, draftVocab). */
  readonly draftVocab: number;
  private readonly embedTokens: WeightMatrix;
  private readonly enorm: Float32Array;
  private readonly hnorm: Float32Array;
  private readonly ehProj: WeightMatrix;
  private readonly layer: DecoderLayerWeights;
  private readonly headNorm: Float32Array;
  private readonly head: WeightMatrix;
  private readonly scratch: DecoderScratch;
  /** [rows, 2·hidden]: the normed embedding and hidden state side by side, eh_proj's input. */
  private joined = new Float32Array(0);
  private headIn = new Float32Array(0);

  /** draftVocab: the head scores ids [0, draftVocab) only (1..vocabSize). */
  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    private readonly options: DecoderOptions,
    draftVocab: number,
  ) {
    const c = checkpoint.config;
    this.config = c;
    const found = findMtpWeights(checkpoint);
    if (!found.found) throw new Error(`${checkpoint.source}: no multi-token-prediction weights (${found.reason})`);
    if (!Number.isInteger(draftVocab) || draftVocab < 1 || draftVocab > c.vocabSize) {
      throw new RangeError(`MTP draft vocabulary ${draftVocab} outside 1..${c.vocabSize}`);
    }
    this.draftVocab = draftVocab;
    const h = c.hiddenSize;
    const p = `model.layers.${found.layer}.`;
    const w = new CheckpointWeights(checkpoint, ops);
    // The main model's embedding (DeepSeek-V3's per-layer embed_tokens copy is the same table).
    this.embedTokens = w.leadingRows('model.embed_tokens.weight', c.vocabSize, h, c.vocabSize);
    this.enorm = w.vector(`${p}enorm.weight`, h);
    this.hnorm = w.vector(`${p}hnorm.weight`, h);
    this.ehProj = w.matrix(`${p}eh_proj.weight`, h, 2 * h);
    this.layer = loadDecoderLayer(w, c, options, p);
    this.headNorm = w.vector(`${p}shared_head.norm.weight`, h);
    // Only the leading draftVocab rows: the draft head's matmul shrinks with it.
    this.head = w.has(`${p}shared_head.head.weight`)
      ? w.leadingRows(`${p}shared_head.head.weight`, c.vocabSize, h, draftVocab)
      : w.leadingRows('lm_head.weight', c.vocabSize, h, draftVocab);
    this.scratch = new DecoderScratch(c);
  }

  /**
   * Runs `n` rows through the layer, storing their k/v into `kv` at rows.slots. Returns the output
   * hidden states [n, hiddenSize] (before shared_head.norm): a view of scratch memory, valid until
   * the next forward.
   */
  forward(rows: MtpRows, n: number, kv: KvLayer): Float32Array {
    const c = this.config;
    const h = c.hiddenSize;
    const ops = this.ops;
    if (rows.tokens.length < n || rows.positions.length < n || rows.slots.length < n || rows.hidden.length < n * h) {
      throw new Error(`MTP forward: fewer inputs than its ${n} rows`);
    }
    const s = this.scratch;
    s.ensure(n);
    if (this.joined.length < s.capacity * 2 * h) this.joined = new Float32Array(s.capacity * 2 * h);
    const tokens = rows.tokens.length === n ? rows.tokens : rows.tokens.subarray(0, n);
    ops.embed(tokens, this.embedTokens, s.normed);
    ops.rmsnorm(s.normed, n, h, this.enorm, c.rmsNormEps, s.normed);
    ops.rmsnorm(rows.hidden.subarray(0, n * h), n, h, this.hnorm, c.rmsNormEps, s.proj);
    for (let i = 0; i < n; i++) {
      const e = s.normed.subarray(i * h, (i + 1) * h);
      // Position 0 has no token before it to predict from: its embedding is masked (vLLM).
      if (rows.positions[i] === 0) this.joined.fill(0, 2 * i * h, (2 * i + 1) * h);
      else this.joined.set(e, 2 * i * h);
      this.joined.set(s.proj.subarray(i * h, (i + 1) * h), (2 * i + 1) * h);
    }
    ops.matmul(this.joined.subarray(0, n * 2 * h), n, this.ehProj, s.hidden.subarray(0, n * h));
    runDecoderLayer(ops, c, this.options, this.layer, s, n, rows, kv);
    return s.hidden.subarray(0, n * h);
  }

  /** Draft logits [n, draftVocab] of `n` output rows of forward (shared_head.norm, then the head). */
  logits(hidden: Float32Array, n: number): Float32Array {
    const c = this.config;
    const h = c.hiddenSize;
    if (this.headIn.length < n * h) this.headIn = new Float32Array(n * h);
    const x = this.headIn.subarray(0, n * h);
    this.ops.rmsnorm(hidden.subarray(0, n * h), n, h, this.headNorm, c.rmsNormEps, x);
    const out = new Float32Array(n * this.draftVocab);
    this.ops.matmul(x, n, this.head, out);
    return out;
  }
}
