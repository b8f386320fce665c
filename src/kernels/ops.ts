// The kernel interface every architecture is written against. Two implementations:
// `reference.ts` (plain TypeScript, the numerical ground truth) and `native.ts` (the C++ addon).
// All activations are Float32Array, row-major. No op allocates its output: callers pass buffers.
import type { DType, KvDType } from './dtypes.js';

export type { DType, KvDType } from './dtypes.js';

/** A 2-D weight [rows = out_features, cols = in_features] in its storage dtype. */
export interface WeightMatrix {
  dtype: DType;
  rows: number;
  cols: number;
  data: Uint8Array;
}

/**
 * One layer's paged KV storage. Layout of `k` and `v`: [numBlocks][blockSize][numKvHeads] rows,
 * each one head vector of headDim values coded in `kDtype` / `vDtype` respectively, in that
 * dtype's rowBytes(headDim) bytes (KV_DTYPES; independent: keys and values may be stored at
 * different precisions, and layers may differ). A token's slot is block * blockSize + offsetInBlock;
 * a block is byteLength / numBlocks bytes.
 */
export interface KvLayer {
  kDtype: KvDType;
  vDtype: KvDType;
  numBlocks: number;
  blockSize: number;
  numKvHeads: number;
  headDim: number;
  k: Uint8Array;
  v: Uint8Array;
  /** For a scaled dtype (fp8, nvfp4) of k / v: stored = value / scale. 1 unless calibrated. */
  kScale: number;
  vScale: number;
}

/** One sequence's share of an attention call. */
export interface AttentionSeq {
  /** First row of this sequence's queries in q/out, and how many rows it has. */
  qStart: number;
  qLen: number;
  /** Tokens of this sequence in the cache, including the qLen just stored. */
  kvLen: number;
  /** Physical block ids, in order; covers kvLen tokens. */
  blockTable: Int32Array;
}

export interface AttentionParams {
  numHeads: number;
  /** Softmax scale, usually 1/sqrt(headDim). */
  scale: number;
  /** Keys older than this many positions are masked (Mistral); null = none. */
  slidingWindow: number | null;
  /**
   * Attention logit soft-capping (Gemma 2's attn_logit_softcapping): each scaled score s becomes
   * cap · tanh(s / cap) before the mask and softmax. Absent, null or 0: none.
   */
  softcap?: number | null;
  /**
   * Attention sinks (GPT-OSS's self_attn.sinks): per query head h, a learned logit sinks[h] (not
   * scaled) that joins the softmax over the head's scores and whose share is dropped, so the
   * weights sum to less than 1: out = Σ_t exp(s_t − m) v_t / (Σ_t exp(s_t − m) + exp(sinks[h] − m)).
   * Length numHeads. Absent: none.
   */
  sinks?: Float32Array;
}

/**
 * Multi-head latent attention (DeepSeek-V2's MLA with kv_b_proj absorbed) over a latent KV layer:
 * numKvHeads 1, each row one token's [c_kv (latentDim) | k_pe (headDim − latentDim)], layer.v empty.
 */
export interface MlaAttentionParams {
  numHeads: number;
  /** Softmax scale ((qk_nope + qk_rope)^-0.5, times YaRN's mscale² where the family applies it). */
  scale: number;
  /** Leading elements of each cached row that are also the value (kv_lora_rank); < layer.headDim. */
  latentDim: number;
}

export type RopeStyle = 'neox' | 'normal';

/**
 * A rope call's frequencies where they are not plain RoPE's over the whole head (partial rotary,
 * LongRoPE); every field absent is plain RoPE.
 */
export interface RopeFrequencies {
  /** Leading elements of each head that rotate (even, ≤ headDim; partial_rotary_factor); the rest pass unchanged. Default headDim. */
  readonly rotaryDim?: number;
  /** Inverse frequency of each of the rotaryDim / 2 pairs, in place of theta^(-2k/rotaryDim) (LongRoPE's, already divided by its factors). */
  readonly invFreq?: Float32Array;
  /** cos and sin are multiplied by this (LongRoPE's attention factor). Default 1. */
  readonly scale?: number;
}

/**
 * Which GELU: erf is the exact one (HF 'gelu'); tanh is HF 'gelu_pytorch_tanh' / 'gelu_new',
 * 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); quick is HF 'quick_gelu' (OpenAI CLIP), x·σ(1.702·x).
 */
export type GeluKind = 'erf' | 'tanh' | 'quick';

/**
 * One mixture-of-experts layer's experts, each a SwiGLU FFN: gate and up [moeIntermediate, hidden],
 * down [hidden, moeIntermediate], prepared weights. Indexed by global expert id; null where this
 * process does not hold the expert (expert parallelism: another rank computes it).
 */
export interface MoeExperts {
  readonly gate: readonly (WeightMatrix | null)[];
  readonly up: readonly (WeightMatrix | null)[];
  readonly down: readonly (WeightMatrix | null)[];
  /**
   * Per-expert biases (GPT-OSS): added to gate·x [inter], up·x [inter] and down·h [hidden] before
   * the activation / the routing weight. Absent, or null for an expert: none.
   */
  readonly bias?: {
    readonly gate: readonly (Float32Array | null)[];
    readonly up: readonly (Float32Array | null)[];
    readonly down: readonly (Float32Array | null)[];
  };
  /** The gate activation; absent: SwiGLU, silu(g) · u. */
  readonly activation?: MoeActivation;
}

/**
 * GPT-OSS's clamped SwiGLU: g ← min(g, limit), u ← clamp(u, −limit, limit), h = (u + 1) · g · σ(alpha · g)
 * (transformers' GptOssExperts: alpha 1.702, limit 7).
 */
export interface MoeActivation {
  readonly kind: 'clamped-swiglu';
  readonly alpha: number;
  readonly limit: number;
}

/** One sequence's rows in a recurrent op (causalConv1d, gatedDeltaRule) and the state slot it continues from and writes back. */
export interface RecurrentSeq {
  /** First row of the sequence in the op's row-major inputs, and how many rows it has. */
  qStart: number;
  qLen: number;
  /** Index of its state in the op's state array ([numSlots, …]). */
  slot: number;
}

/**
 * Mamba2's selective state-space scan (ops.ssdScan): head layout and per-head parameters. Head h reads
 * B / C group floor(h / (numHeads / nGroups)) (transformers' repeat_interleave).
 */
export interface SsdParams {
  numHeads: number;
  headDim: number;
  /** d_state: the length of B, C and each state row. */
  stateSize: number;
  nGroups: number;
  /** A = −exp(A_log), per head. */
  a: Float32Array;
  /** The skip D, per head. */
  d: Float32Array;
  dtBias: Float32Array;
  /** dt = clamp(softplus(dt + dtBias), dtMin, dtMax) (time_step_limit; Nemotron-H: time_step_min, no upper bound). */
  dtMin: number;
  dtMax: number;
}

/** Head layout of a gated delta rule call (Qwen3.5 / Qwen3-Next GatedDeltaNet). */
export interface GatedDeltaParams {
  /** q/k heads; each serves numVHeads / numKHeads consecutive v heads (transformers' repeat_interleave). */
  numKHeads: number;
  numVHeads: number;
  kDim: number;
  vDim: number;
  /** L2-normalise each q and k head vector first (x · rsqrt(Σx² + 1e-6), transformers' use_qk_l2norm_in_kernel). */
  l2norm: boolean;
}

/**
 * A backend whose prepareWeight repacks some dtypes into a layout of its own (nativeOps: native/packed.h),
 * and takes such bytes back: the packed-weights cache (src/model/loaders/packed-cache.ts) keeps them
 * in a file and hands them back on a later load instead of repacking.
 */
export interface PackedLayout {
  /** Names the layout and its version: bytes packed under another format are not these. */
  format(): string;
  /** True when prepareWeight repacked w (w.data is the packed bytes). */
  isPacked(w: WeightMatrix): boolean;
  /** The bytes prepareWeight makes of a [rows, cols] `dtype` matrix; null when it leaves it as it is. */
  packedLength(dtype: DType, rows: number, cols: number): number | null;
  /**
   * The weight prepareWeight made earlier of a [rows, cols] `dtype` matrix, over `data`: bytes it
   * made then (under the same format), 64-byte aligned. Throws when their length is not packedLength.
   */
  adopt(dtype: DType, rows: number, cols: number, data: Uint8Array): WeightMatrix;
}

/** One matrix of a shared-input matmul: y[n, w.rows] = x · wᵀ (+ bias). */
export interface MatmulPart {
  w: WeightMatrix;
  y: Float32Array;
  bias?: Float32Array | undefined;
}

/** Each part's matmul over x: one ops.matmulShared call where the backend has it. */
export function matmulParts(ops: Ops, x: Float32Array, n: number, parts: readonly MatmulPart[]): void {
  if (ops.matmulShared) ops.matmulShared(x, n, parts);
  else for (const p of parts) ops.matmul(x, n, p.w, p.y, p.bias);
}

export interface Ops {
  readonly name: string;
  /** Turn a loaded weight into whatever layout this backend multiplies fastest (may return it unchanged). */
  prepareWeight(w: WeightMatrix): WeightMatrix;
  /** Set when prepareWeight repacks into a layout of its own that can be cached (PackedLayout). */
  readonly packedLayout?: PackedLayout;
  /**
   * Zeroed bytes for a large buffer this backend's kernels read at random (the KV cache), in the
   * memory it reads fastest (nativeOps: transparent huge pages); absent: a plain Uint8Array.
   */
  readonly allocateLarge?: (bytes: number) => Uint8Array;
  /** y[n, w.rows] = x[n, w.cols] · wᵀ (+ bias[w.rows]). */
  matmul(x: Float32Array, n: number, w: WeightMatrix, y: Float32Array, bias?: Float32Array): void;
  /**
   * matmul of each part over the same x (every w with x's width): the same results as the separate
   * calls, in one call (nativeOps: the activations quantized once, one pool dispatch). Absent: call
   * matmulParts, which falls back to separate matmuls.
   */
  matmulShared?(x: Float32Array, n: number, parts: readonly MatmulPart[]): void;
  /** out[i, :] = row ids[i] of table, as f32. */
  embed(ids: Int32Array, table: WeightMatrix, out: Float32Array): void;
  /** RMSNorm over each of `rows` rows of length dim: out = x / rms(x) * weight. out may alias x. */
  rmsnorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, eps: number, out: Float32Array): void;
  /**
   * Rotary embedding in place on x[n, numHeads, headDim], token i at positions[i].
   * neox: rotate halves (HF rotate_half); normal: rotate adjacent pairs (GPT-J). `freqs`: partial
   * rotary (only the first rotaryDim elements, paired within them), given inverse frequencies (theta
   * then unused) and a cos/sin scale; absent, the whole head at theta^(-2k/headDim).
   */
  rope(
    x: Float32Array,
    n: number,
    numHeads: number,
    headDim: number,
    positions: Int32Array,
    theta: number,
    style: RopeStyle,
    freqs?: RopeFrequencies,
  ): void;
  /**
   * Multimodal rotary embedding (Qwen2-VL's M-RoPE) in place on x[n, numHeads, headDim], neox pairing.
   * `sections` splits the headDim / 2 frequencies, in order, among position rows: pair k (elements k
   * and k + headDim / 2) turns at positions[s·n + i] for the section s that k falls in. positions is
   * [sections.length, n] (Qwen2-VL: temporal, height, width). With every row the same it is
   * rope(…, 'neox').
   */
  ropeMulti(
    x: Float32Array,
    n: number,
    numHeads: number,
    headDim: number,
    positions: Int32Array,
    sections: Int32Array,
    theta: number,
  ): void;
  /** out[i] = silu(gate[i]) * up[i] for i < len. out may alias gate. */
  siluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number): void;
  /**
   * out[i] = gelu(gate[i]) * up[i] for i < len, the GELU of the given kind rounded to f32 before the
   * product (as an f32 torch MLP: act_fn(gate_proj(x)) * up_proj(x); Gemma's gelu_pytorch_tanh is
   * 'tanh'). out may alias gate, not up.
   */
  geluMul(gate: Float32Array, up: Float32Array, out: Float32Array, len: number, kind: GeluKind): void;
  /**
   * Tanh soft-capping: out[i] = cap · tanh(x[i] / cap) for i < len (Gemma 2's final_logit_softcapping).
   * cap > 0. out may alias x.
   */
  softcap(x: Float32Array, out: Float32Array, len: number, cap: number): void;
  /** out[i] = a[i] + b[i]. out may alias a. */
  add(a: Float32Array, b: Float32Array, out: Float32Array, len: number): void;
  /**
   * LayerNorm over each of `rows` rows of length dim: out = (x − mean) / √(var + eps) · weight + bias,
   * var the biased variance (as torch). out may alias x.
   */
  layerNorm(x: Float32Array, rows: number, dim: number, weight: Float32Array, bias: Float32Array, eps: number, out: Float32Array): void;
  /** out[i] = gelu(x[i]) of the given kind for i < len. out may alias x. */
  gelu(x: Float32Array, out: Float32Array, len: number, kind: GeluKind): void;
  /**
   * Unmasked multi-head attention over dense rows (vision encoders, attention pooling): every one of
   * the nq queries sees all nk keys. q and out are [nq, numHeads, headDim], k and v [nk, numHeads,
   * headDim]; out[i, h] = softmax(scale · q[i, h] · k[:, h]ᵀ) · v[:, h]. out may alias q, not k or v.
   */
  bidirectionalAttention(
    q: Float32Array,
    nq: number,
    k: Float32Array,
    v: Float32Array,
    nk: number,
    numHeads: number,
    headDim: number,
    scale: number,
    out: Float32Array,
  ): void;
  /** Write k/v rows [n, numKvHeads*headDim] into the cache at the given absolute slots. */
  storeKv(layer: KvLayer, k: Float32Array, v: Float32Array, n: number, slots: Int32Array): void;
  /**
   * Causal attention over the paged cache, grouped-query (numHeads / numKvHeads queries share a KV head).
   * q and out are [totalRows, numHeads, headDim]; query row j of a sequence sits at position kvLen - qLen + j.
   */
  attention(q: Float32Array, layer: KvLayer, seqs: AttentionSeq[], params: AttentionParams, out: Float32Array): void;
  /**
   * MLA: writes latent rows [n, layer.headDim] (each token's normalised c_kv then its rotated k_pe)
   * into layer.k at the given slots, in layer.kDtype; an MLA layer (numKvHeads 1) has no V side.
   */
  storeLatentKv(layer: KvLayer, latent: Float32Array, n: number, slots: Int32Array): void;
  /**
   * Causal multi-head latent attention over the paged latent cache (storeLatentKv): every query head
   * h scores each cached row r as scale · q[i, h] · r (q [totalRows, numHeads, layer.headDim]: the
   * query absorbed into latent space, then q_pe), and out[i, h] [totalRows, numHeads, latentDim] is
   * the softmax-weighted sum of the rows' first latentDim elements (c_kv). Query row j of a sequence
   * sits at position kvLen − qLen + j. out must not overlap q.
   */
  mlaAttention(q: Float32Array, layer: KvLayer, seqs: AttentionSeq[], params: MlaAttentionParams, out: Float32Array): void;
  /**
   * The routed experts of a MoE layer: out[i, :] = Σ_j weights[i·k + j] · FFN_e(x[i, :]) with
   * e = ids[i·k + j] and FFN_e(x) = down_e(silu(gate_e·x) ⊙ up_e·x), over the experts `experts`
   * holds (the others contribute nothing). x [n, hidden]; ids, weights [n, k]; out [n, hidden] is
   * overwritten and must not overlap x. Rows are grouped per expert so each expert's weights are
   * read once per call, and only the experts some row selected are read at all.
   */
  moe(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number, out: Float32Array): void;
  /**
   * Causal depthwise conv1d then SiLU, per sequence, carrying the last kernel − 1 inputs
   * (GatedDeltaNet's conv1d; transformers' causal_conv1d_update): out[t, c] = silu(Σ_j weight[j, c] ·
   * in[t − kernel + 1 + j, c]), where inputs before the sequence's first row are the slot's state
   * (zeros in a reset slot). Afterwards the slot holds the last kernel − 1 inputs. x and out are
   * [rows, channels] (out must not overlap x); weight is [kernel, channels] (transformers' [channels,
   * 1, kernel] transposed); state is [numSlots, kernel − 1, channels], read and written at each seq's slot.
   * `bias` [channels] (Mamba2's conv1d bias), when given, is added before the SiLU.
   */
  causalConv1d(
    x: Float32Array,
    channels: number,
    kernel: number,
    weight: Float32Array,
    seqs: readonly RecurrentSeq[],
    state: Float32Array,
    out: Float32Array,
    bias?: Float32Array,
  ): void;
  /**
   * The gated delta rule, recurrent form (transformers' torch_recurrent_gated_delta_rule), token by
   * token per sequence and v head h, with S = the slot's state [kDim, vDim] and q, k from head
   * floor(h · numKHeads / numVHeads) (q l2-normalised if asked, then scaled by 1/√kDim):
   * S ← exp(g)·S; S ← S + k ⊗ (beta · (v − Sᵀk)); out = Sᵀq. q and k are [rows, numKHeads, kDim],
   * v and out [rows, numVHeads, vDim], g (the log decay) and beta [rows, numVHeads]; state is
   * [numSlots, numVHeads, kDim, vDim], read and written at each seq's slot.
   */
  gatedDeltaRule(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    g: Float32Array,
    beta: Float32Array,
    seqs: readonly RecurrentSeq[],
    params: GatedDeltaParams,
    state: Float32Array,
    out: Float32Array,
  ): void;
  /**
   * Mamba2's selective state-space scan (SSD) in its recurrent form (transformers' Mamba2Mixer
   * torch_forward, cached step), token by token per sequence and head h, with S = the slot's state
   * [headDim, stateSize] and B, C from h's group: dt = clamp(softplus(dt + dtBias), dtMin, dtMax);
   * S ← exp(dt·A)·S + dt·x ⊗ B; y = S·C + D·x. x and out are [rows, numHeads, headDim], dt [rows,
   * numHeads] (before softplus), b and c [rows, nGroups, stateSize]; state is [numSlots, numHeads,
   * headDim, stateSize], read and written at each seq's slot.
   */
  ssdScan(
    x: Float32Array,
    dt: Float32Array,
    b: Float32Array,
    c: Float32Array,
    seqs: readonly RecurrentSeq[],
    params: SsdParams,
    state: Float32Array,
    out: Float32Array,
  ): void;
}
