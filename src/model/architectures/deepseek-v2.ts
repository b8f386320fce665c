// DeepSeek-V2 (DeepseekV2ForCausalLM, model_type deepseek_v2): multi-head latent attention (MLA) and
// DeepSeekMoE, as transformers' modeling_deepseek_v2 runs them, with the KV cache holding the latent:
//   - q: q_proj, or q_a_proj → q_a_layernorm → q_b_proj (q_lora_rank); per head q_nope (qk_nope_head_dim)
//     then q_pe (qk_rope_head_dim);
//   - kv_a_proj_with_mqa → [c_kv (kv_lora_rank) | k_pe (qk_rope_head_dim)]; c_kv through kv_a_layernorm;
//     k_pe is one rope key shared by every head;
//   - RoPE on q_pe and k_pe only, adjacent pairs (2i, 2i + 1) — transformers multiplies them as complex
//     numbers (view_as_complex), which is ops.rope's 'normal' style; YaRN when rope_scaling says so
//     (its inverse frequencies and cos/sin factor, yarn.ts);
//   - kv_b_proj [heads · (nope + v), kv_lora_rank] would expand c_kv to each head's k_nope and v. svc never
//     expands it: the cache stores each token's latent row [kv_a_layernorm(c_kv) | rope(k_pe)] once per
//     layer (one KV head of kv_lora_rank + qk_rope_head_dim; engine/kv-cache.ts), and attention runs in
//     latent space with kv_b_proj absorbed (ops.mlaAttention): q_latent_h = W_UK_hᵀ · q_nope_h, so
//     q_latent_h · c_kv + q_pe_h · k_pe is the score q_nope_h · k_nope_h + q_pe_h · k_pe_h; the
//     softmax-weighted sum of c_kv is multiplied by W_UV_h per head, then o_proj;
//   - softmax scale (qk_nope + qk_rope)^-0.5, times YaRN's mscale(factor, mscale_all_dim)² (see
//     deepseekV2Config: transformers 5 leaves that factor out);
//   - feed-forward: the dense SwiGLU MLP for the first first_k_dense_replace layers (and layers off
//     moe_layer_freq), else DeepSeekMoE: softmax router, greedy or group-limited greedy top-k, weights
//     times routed_scaling_factor (or renormalised with norm_topk_prob), plus n_shared_experts shared
//     experts as one ungated SwiGLU of n_shared_experts · moe_intermediate_size (MoeBlock.shared).
// q_a_layernorm and kv_a_layernorm use DeepseekV2RMSNorm's default eps 1e-6 (transformers builds them
// without rms_norm_eps); the decoder's norms use rms_norm_eps.
// GGUF (llama.cpp 'deepseek2', conversion/deepseek.py DeepseekV2Model): the loader rebuilds kv_b_proj from
// the split attn_k_b / attn_v_b (or takes an older file's attn_kv_b; loaders/gguf-names.ts); ggufDeepseekV2Config
// reads the MLA ranks and head sizes (attention.kv_lora_rank, key_length_mla, value_length_mla,
// rope.dimension_count), YaRN as llama.cpp runs it and DeepSeekMoE's keys (leading_dense_block_count,
// expert_*). What a file cannot carry: YaRN's `mscale` (llama.cpp takes it equal to mscale_all_dim, as every
// DeepSeek-V2 checkpoint has it: cos / sin factor 1) and moe_layer_freq (llama.cpp: every layer after the
// leading dense ones is MoE).
import type { KvLayer, Ops, RopeFrequencies, WeightMatrix } from '../../kernels/ops.js';
import type { Checkpoint, MlaConfig, ModelConfig, YarnConfig } from '../types.js';
import type { ArchitectureModule, ForwardBatch, ForwardOptions, GgufConfigReader, Model, OutputHead } from './model.js';
import { expertRange, type ModelOptions } from './expert-placement.js';
import { expertShape, loadLayerExperts, loadRouter } from './expert-weights.js';
import { MoeBlock, MoeScratch } from './moe.js';
import { CheckpointWeights } from './weights.js';
import type { DecoderOptions } from './decoder-layer.js';
import { yarnMscale, yarnRopeInvFreq } from './yarn.js';
import { bf16OutputHead, selectedRowLogits } from './output-head.js';

type Json = Readonly<Record<string, unknown>>;

/** DeepseekV2Config's defaults (transformers), for keys a config.json leaves out. */
const DEEPSEEK_V2_DEFAULTS: Json = {
  vocab_size: 102400,
  hidden_size: 4096,
  intermediate_size: 11008,
  num_hidden_layers: 30,
  num_attention_heads: 32,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  kv_lora_rank: 512,
  q_lora_rank: 1536,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  n_routed_experts: 64,
  n_shared_experts: 2,
  moe_intermediate_size: 1407,
  num_experts_per_tok: 6,
  first_k_dense_replace: 0,
  moe_layer_freq: 1,
  routed_scaling_factor: 1,
  topk_method: 'greedy',
  scoring_func: 'softmax',
  norm_topk_prob: false,
  hidden_act: 'silu',
};

/** The attention's norms built without rms_norm_eps (DeepseekV2RMSNorm's default). */
const LATENT_NORM_EPS = 1e-6;

/** config.json's MLA, YaRN and DeepSeekMoE keys (defaults filled in) → ModelConfig fields. */
export function deepseekV2Config(raw: Json): Partial<ModelConfig> {
  const int = (key: string, min = 1): number => {
    const v = raw[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new Error(`missing or invalid "${key}"`);
    return v;
  };
  const optionalInt = (key: string): number | null => (raw[key] === null || raw[key] === undefined ? null : int(key));
  if (raw.hidden_act !== 'silu') throw new Error(`hidden_act ${JSON.stringify(raw.hidden_act)} is not supported (silu only)`);
  const numHeads = int('num_attention_heads');
  const qkNope = int('qk_nope_head_dim');
  const qkRope = int('qk_rope_head_dim');
  if (qkRope % 2 !== 0) throw new Error(`qk_rope_head_dim ${qkRope} is not even`);
  const yarn = deepseekYarn(raw);
  // Under YaRN with mscale_all_dim, DeepSeek's own modeling code (and vLLM, SGLang, transformers 4's
  // DeepSeek-V3) multiply the softmax scale by mscale(factor, mscale_all_dim)², on top of the attention
  // factor on cos / sin: what the checkpoints were trained with, and what svc does. transformers 5's
  // DeepseekV2Attention leaves it out (scale (nope + rope)^-0.5 only); its yarn fixture matches svc
  // with that scale (test/unit/arch-deepseek-v2.test.ts) and is far from it with the factor.
  const mscaleAllDim = yarn ? (numberIn(raw.rope_scaling, 'mscale_all_dim') ?? numberIn(raw.rope_parameters, 'mscale_all_dim')) : undefined;
  const mscale = yarn && mscaleAllDim ? yarnMscale(yarn.factor, mscaleAllDim) : 1;
  const mla: MlaConfig = {
    kvLoraRank: int('kv_lora_rank'),
    qLoraRank: optionalInt('q_lora_rank'),
    qkNopeHeadDim: qkNope,
    qkRopeHeadDim: qkRope,
    vHeadDim: int('v_head_dim'),
    softmaxScale: (qkNope + qkRope) ** -0.5 * mscale * mscale,
    ...(yarn ? { yarn } : {}),
  };
  // q and k heads are nope + rope wide; every layer is MLA over one latent head (numKvHeads unused by the cache).
  const out: Partial<ModelConfig> = { headDim: qkNope + qkRope, numKvHeads: numHeads, mla };
  const numExperts = optionalInt('n_routed_experts');
  if (numExperts === null) return out;
  if (raw.scoring_func !== 'softmax')
    throw new Error(`scoring_func ${JSON.stringify(raw.scoring_func)} is not supported (softmax only; DeepSeek-V3's sigmoid gate is not)`);
  const perTok = int('num_experts_per_tok');
  if (perTok > numExperts) throw new Error(`num_experts_per_tok ${perTok} exceeds the ${numExperts} routed experts`);
  const method = raw.topk_method;
  let groups: { numGroups: number; topkGroups: number } | undefined;
  if (method === 'group_limited_greedy') {
    groups = { numGroups: int('n_group'), topkGroups: int('topk_group') };
    if (numExperts % groups.numGroups !== 0 || groups.topkGroups > groups.numGroups)
      throw new Error(`n_group ${groups.numGroups} / topk_group ${groups.topkGroups} do not split ${numExperts} experts`);
    if (groups.topkGroups * (numExperts / groups.numGroups) < perTok)
      throw new Error(`topk_group ${groups.topkGroups} groups hold fewer than num_experts_per_tok ${perTok} experts`);
  } else if (method !== 'greedy') {
    throw new Error(`topk_method ${JSON.stringify(method)} is not supported (greedy, group_limited_greedy)`);
  }
  const scale = raw.routed_scaling_factor;
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new Error('routed_scaling_factor must be a finite number');
  const firstDense = int('first_k_dense_replace', 0);
  const freq = int('moe_layer_freq');
  const numLayers = int('num_hidden_layers');
  const width = int('moe_intermediate_size');
  const shared = optionalInt('n_shared_experts') ?? 0;
  return {
    ...out,
    numExperts,
    numExpertsPerTok: perTok,
    moeIntermediateSize: width,
    normTopkProb: raw.norm_topk_prob === true,
    moeLayers: Array.from({ length: numLayers }, (_, i) => i >= firstDense && i % freq === 0),
    ...(shared > 0 ? { sharedExpertIntermediateSize: shared * width } : {}),
    moeRouting: { scale, ...(groups ? { groups } : {}) },
  };
}

/**
 * A llama.cpp 'deepseek2' file's MLA / YaRN / DeepSeekMoE keys (the converter's DeepseekV2Model.set_gguf_parameters,
 * read as src/models/deepseek2.cpp and llama-context.cpp do). head_count_kv 1 and key_length kv_lora_rank +
 * rope (MLA as MQA) are llama.cpp's view; svc's fields are Hugging Face's (heads of nope + rope).
 */
export function ggufDeepseekV2Config(g: GgufConfigReader, c: ModelConfig): Partial<ModelConfig> {
  const int = (key: string, fallback?: number): number => {
    const v = g.num(key) ?? fallback;
    if (v === undefined || !Number.isInteger(v) || v < 0) throw new Error(`missing or invalid ${g.arch}.${key}`);
    return v;
  };
  const qkRope = int('rope.dimension_count');
  const kvLoraRank = int('attention.kv_lora_rank');
  // Files before key_length_mla wrote the MHA sizes as key_length / value_length.
  const qkHead = g.num('attention.key_length_mla') ?? int('attention.key_length');
  const vHeadDim = g.num('attention.value_length_mla') ?? int('attention.value_length');
  const qLora = g.num('attention.q_lora_rank');
  const type = g.value('rope.scaling.type');
  let yarn: YarnConfig | undefined;
  let mscale = 1;
  if (type === 'yarn') {
    const factor = g.num('rope.scaling.factor') ?? 1;
    // llama-context.cpp: with yarn_log_multiplier (mscale_all_dim · 0.1 in the file) mscale = mscale_all_dim,
    // so the cos / sin factor is get_mscale(f, m) / get_mscale(f, m) = 1 (times rope.scaling.attn_factor);
    // deepseek2.cpp's softmax scale carries (1 + 0.1 · mscale_all_dim · ln f)².
    const logMul = (g.num('rope.scaling.yarn_log_multiplier') ?? 0) / 0.1;
    const attnFactor = g.num('rope.scaling.attn_factor') ?? 1;
    yarn = {
      factor,
      originalMaxPositionEmbeddings: int('rope.scaling.original_context_length'),
      betaFast: g.num('rope.scaling.yarn_beta_fast') ?? 32,
      betaSlow: g.num('rope.scaling.yarn_beta_slow') ?? 1,
      attentionFactor: attnFactor,
      // ggml_rope_yarn_corr_dims floors / ceils the correction range.
      truncate: true,
    };
    mscale = attnFactor * (logMul !== 0 ? yarnMscale(factor, logMul) : 1);
  } else if (type !== undefined && type !== 'none') {
    throw new Error(`rope.scaling.type ${String(type)} is not supported for deepseek2 (yarn only)`);
  }
  const mla: MlaConfig = {
    kvLoraRank,
    qLoraRank: qLora !== undefined && qLora > 0 ? qLora : null,
    qkNopeHeadDim: qkHead - qkRope,
    qkRopeHeadDim: qkRope,
    vHeadDim,
    softmaxScale: qkHead ** -0.5 * mscale * mscale,
    ...(yarn ? { yarn } : {}),
  };
  const out: Partial<ModelConfig> = { headDim: qkHead, numKvHeads: c.numHeads, mla };
  const numExperts = g.num('expert_count') ?? 0;
  if (numExperts === 0) return out;
  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE: 1 softmax (the default for files without the key), 2 sigmoid.
  const gating = g.num('expert_gating_func') ?? 1;
  if (gating !== 1) throw new Error(`expert_gating_func ${gating} is not supported (softmax only; DeepSeek-V3's sigmoid gate is not)`);
  const perTok = int('expert_used_count');
  const width = int('expert_feed_forward_length');
  const shared = g.num('expert_shared_count') ?? 0;
  const lead = g.num('leading_dense_block_count') ?? 0;
  const groupCount = g.num('expert_group_count') ?? 0;
  const groupUsed = g.num('expert_group_used_count') ?? 0;
  const norm = g.value('expert_weights_norm');
  return {
    ...out,
    numExperts,
    numExpertsPerTok: perTok,
    moeIntermediateSize: width,
    normTopkProb: norm === true,
    moeLayers: Array.from({ length: c.numLayers }, (_, i) => i >= lead),
    ...(shared > 0 ? { sharedExpertIntermediateSize: shared * width } : {}),
    moeRouting: {
      // Absent: llama.cpp does not scale (scale_w false).
      scale: g.num('expert_weights_scale') ?? 1,
      ...(groupCount > 1 ? { groups: { numGroups: groupCount, topkGroups: groupUsed } } : {}),
    },
  };
}

/** holder[key] when holder is an object and that is a finite number. */
function numberIn(holder: unknown, key: string): number | undefined {
  if (!holder || typeof holder !== 'object') return undefined;
  const v = (holder as Json)[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** rope_scaling (or transformers 5's rope_parameters) of type yarn, as _compute_yarn_parameters reads it. */
function deepseekYarn(raw: Json): YarnConfig | undefined {
  const holders = [raw.rope_scaling, raw.rope_parameters].filter((h): h is Json => !!h && typeof h === 'object' && !Array.isArray(h));
  const kind = (h: Json) => String(h.rope_type ?? h.type ?? 'default');
  const rope = holders.find((h) => kind(h) !== 'default');
  if (!rope) return undefined;
  if (kind(rope) !== 'yarn') throw new Error(`rope type ${kind(rope)} is not supported for deepseek_v2 (yarn only)`);
  const numOr = (key: string, fallback: number | undefined): number | undefined => {
    const v = rope[key];
    return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
  };
  const maxPositions = typeof raw.max_position_embeddings === 'number' ? raw.max_position_embeddings : undefined;
  const original = numOr('original_max_position_embeddings', maxPositions);
  if (original === undefined || original <= 0) throw new Error('yarn: no original_max_position_embeddings');
  const factor = numOr('factor', maxPositions !== undefined ? maxPositions / original : undefined);
  if (factor === undefined || !(factor > 0)) throw new Error('yarn: factor must be positive');
  const mscale = numOr('mscale', undefined);
  const mscaleAllDim = numOr('mscale_all_dim', undefined);
  const given = numOr('attention_factor', undefined);
  const attentionFactor =
    given ?? (mscale && mscaleAllDim ? yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAllDim) : yarnMscale(factor));
  return {
    factor,
    originalMaxPositionEmbeddings: original,
    // transformers: `get("beta_fast") or 32` — a 0 falls back too.
    betaFast: numOr('beta_fast', 0) || 32,
    betaSlow: numOr('beta_slow', 0) || 1,
    attentionFactor,
    truncate: rope.truncate !== false,
  };
}

interface SwiGlu {
  gate: WeightMatrix;
  up: WeightMatrix;
  down: WeightMatrix;
}

interface MlaWeights {
  /** q_proj [heads · (nope + rope), hidden], or q_a_proj / q_a_layernorm / q_b_proj. */
  q: WeightMatrix | null;
  qA: WeightMatrix | null;
  qABias: Float32Array | undefined;
  qANorm: Float32Array | null;
  qB: WeightMatrix | null;
  kvA: WeightMatrix;
  kvABias: Float32Array | undefined;
  kvANorm: Float32Array;
  /** Per head: W_UK_hᵀ [kvLoraRank, nope] (q_nope → latent query) and W_UV_h [v, kvLoraRank] (latent → value). */
  uk: WeightMatrix[];
  uv: WeightMatrix[];
  o: WeightMatrix;
  oBias: Float32Array | undefined;
}

interface DeepseekLayer {
  inputNorm: Float32Array;
  postNorm: Float32Array;
  attn: MlaWeights;
  mlp: SwiGlu | null;
  moe: MoeBlock | null;
}

class Scratch {
  capacity = 0;
  hidden = new Float32Array(0);
  normed = new Float32Array(0);
  qLow = new Float32Array(0);
  q = new Float32Array(0);
  kvA = new Float32Array(0);
  latent = new Float32Array(0);
  cKv = new Float32Array(0);
  kPe = new Float32Array(0);
  qPe = new Float32Array(0);
  qAbsorbed = new Float32Array(0);
  headIn = new Float32Array(0);
  headOut = new Float32Array(0);
  attnLatent = new Float32Array(0);
  attnV = new Float32Array(0);
  proj = new Float32Array(0);
  ffGate = new Float32Array(0);
  ffUp = new Float32Array(0);

  constructor(
    private readonly c: ModelConfig,
    private readonly m: MlaConfig,
  ) {}

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const { c, m } = this;
    const heads = c.numHeads;
    const row = m.kvLoraRank + m.qkRopeHeadDim;
    const f = (len: number) => new Float32Array(cap * len);
    this.hidden = f(c.hiddenSize);
    this.normed = f(c.hiddenSize);
    this.qLow = f(m.qLoraRank ?? 0);
    this.q = f(heads * c.headDim);
    this.kvA = f(row);
    this.latent = f(row);
    this.cKv = f(m.kvLoraRank);
    this.kPe = f(m.qkRopeHeadDim);
    this.qPe = f(heads * m.qkRopeHeadDim);
    this.qAbsorbed = f(heads * row);
    this.headIn = f(Math.max(m.qkNopeHeadDim, m.kvLoraRank));
    this.headOut = f(Math.max(m.kvLoraRank, m.vHeadDim));
    this.attnLatent = f(heads * m.kvLoraRank);
    this.attnV = f(heads * m.vHeadDim);
    this.proj = f(c.hiddenSize);
    this.ffGate = f(c.intermediateSize);
    this.ffUp = f(c.intermediateSize);
    this.capacity = cap;
  }
}

/** f32 copy of `data` as a prepared [rows, cols] weight. */
function f32Weight(ops: Ops, data: Float32Array, rows: number, cols: number): WeightMatrix {
  return ops.prepareWeight({ dtype: 'f32', rows, cols, data: new Uint8Array(data.buffer, data.byteOffset, rows * cols * 4) });
}

/** DeepSeek-V2: embed → N × [RMSNorm → MLA → residual → RMSNorm → MLP / DeepSeekMoE → residual] → norm → lm_head. */
export class DeepseekV2Model implements Model {
  readonly config: ModelConfig;
  private readonly mla: MlaConfig;
  private readonly embedTokens: WeightMatrix;
  private readonly lmHead: WeightMatrix;
  private readonly finalNorm: Float32Array;
  private readonly layers: DeepseekLayer[];
  private readonly scratch: Scratch;
  private readonly moeScratch: MoeScratch | null;
  private readonly ropeFreqs: RopeFrequencies | undefined;
  private lastRows = 0;

  constructor(
    checkpoint: Checkpoint,
    private readonly ops: Ops,
    placement?: ModelOptions,
  ) {
    const c = checkpoint.config;
    const m = c.mla;
    if (!m) throw new Error(`${checkpoint.source}: a DeepSeek-V2 config without its MLA shapes`);
    this.config = c;
    this.mla = m;
    const w = new CheckpointWeights(checkpoint, ops);
    const hs = c.hiddenSize;
    const heads = c.numHeads;
    const qkHead = m.qkNopeHeadDim + m.qkRopeHeadDim;
    const rank = m.kvLoraRank;
    this.embedTokens = w.matrix('model.embed_tokens.weight', c.vocabSize, hs);
    this.lmHead = c.tieWordEmbeddings ? this.embedTokens : w.matrix('lm_head.weight', c.vocabSize, hs);
    this.finalNorm = w.vector('model.norm.weight', hs);
    this.ropeFreqs = m.yarn ? { invFreq: yarnRopeInvFreq(m.qkRopeHeadDim, c.ropeTheta, m.yarn), scale: m.yarn.attentionFactor } : undefined;
    const swiglu = (p: string, width: number): SwiGlu => ({
      gate: w.matrix(`${p}gate_proj.weight`, width, hs),
      up: w.matrix(`${p}up_proj.weight`, width, hs),
      down: w.matrix(`${p}down_proj.weight`, hs, width),
    });
    this.layers = [];
    for (let i = 0; i < c.numLayers; i++) {
      const p = `model.layers.${i}.`;
      const a = `${p}self_attn.`;
      // kv_b_proj split per head into W_UK_h [nope, rank] (kept transposed) and W_UV_h [v, rank], in f32.
      const kvB = w.array(`${a}kv_b_proj.weight`, [heads * (m.qkNopeHeadDim + m.vHeadDim), rank]);
      const uk: WeightMatrix[] = [];
      const uv: WeightMatrix[] = [];
      for (let h = 0; h < heads; h++) {
        const base = h * (m.qkNopeHeadDim + m.vHeadDim) * rank;
        const t = new Float32Array(rank * m.qkNopeHeadDim);
        for (let d = 0; d < m.qkNopeHeadDim; d++) for (let r = 0; r < rank; r++) t[r * m.qkNopeHeadDim + d] = kvB[base + d * rank + r];
        uk.push(f32Weight(ops, t, rank, m.qkNopeHeadDim));
        const vStart = base + m.qkNopeHeadDim * rank;
        uv.push(f32Weight(ops, kvB.slice(vStart, vStart + m.vHeadDim * rank), m.vHeadDim, rank));
      }
      const lora = m.qLoraRank;
      const attn: MlaWeights = {
        q: lora === null ? w.matrix(`${a}q_proj.weight`, heads * qkHead, hs) : null,
        qA: lora === null ? null : w.matrix(`${a}q_a_proj.weight`, lora, hs),
        qABias: lora === null ? undefined : w.optionalVector(`${a}q_a_proj.bias`, lora),
        qANorm: lora === null ? null : w.vector(`${a}q_a_layernorm.weight`, lora),
        qB: lora === null ? null : w.matrix(`${a}q_b_proj.weight`, heads * qkHead, lora),
        kvA: w.matrix(`${a}kv_a_proj_with_mqa.weight`, rank + m.qkRopeHeadDim, hs),
        kvABias: w.optionalVector(`${a}kv_a_proj_with_mqa.bias`, rank + m.qkRopeHeadDim),
        kvANorm: w.vector(`${a}kv_a_layernorm.weight`, rank),
        uk,
        uv,
        o: w.matrix(`${a}o_proj.weight`, hs, heads * m.vHeadDim),
        oBias: w.optionalVector(`${a}o_proj.bias`, hs),
      };
      const moe = c.moeLayers?.[i] ? this.loadMoe(w, c, i, p, placement) : null;
      this.layers.push({
        inputNorm: w.vector(`${p}input_layernorm.weight`, hs),
        postNorm: w.vector(`${p}post_attention_layernorm.weight`, hs),
        attn,
        mlp: moe ? null : swiglu(`${p}mlp.`, c.intermediateSize),
        moe,
      });
    }
    this.scratch = new Scratch(c, m);
    this.moeScratch =
      c.numExperts && c.numExpertsPerTok ? new MoeScratch(c.numExperts, c.numExpertsPerTok, c.sharedExpertIntermediateSize ?? 0, hs) : null;
  }

  /** DeepSeekMoE: the router (mlp.gate), the routed experts held here, the shared experts as one ungated expert. */
  private loadMoe(w: CheckpointWeights, c: ModelConfig, layer: number, p: string, placement?: ModelOptions): MoeBlock {
    const s = expertShape(c);
    const range = placement?.experts ? expertRange(s.numExperts, placement.experts.shard) : ([0, s.numExperts] as const);
    const width = c.sharedExpertIntermediateSize;
    const shared = width
      ? {
          gate: w.matrix(`${p}mlp.shared_experts.gate_proj.weight`, width, c.hiddenSize),
          up: w.matrix(`${p}mlp.shared_experts.up_proj.weight`, width, c.hiddenSize),
          down: w.matrix(`${p}mlp.shared_experts.down_proj.weight`, c.hiddenSize, width),
        }
      : null;
    return new MoeBlock(
      layer,
      loadRouter(w, c, p),
      loadLayerExperts(w, c, p, range),
      s.perToken,
      c.normTopkProb ?? false,
      placement?.experts?.remote ?? null,
      shared,
      null,
      c.moeRouting ?? { scale: 1 },
    );
  }

  forward(batch: ForwardBatch, kv: KvLayer[], options?: ForwardOptions): Float32Array {
    const c = this.config;
    const ops = this.ops;
    const n = batch.tokens.length;
    this.checkBatch(batch, kv);
    const s = this.scratch;
    s.ensure(n);
    this.moeScratch?.ensure(n);
    this.lastRows = n;
    const skip = options?.skipLayers;
    const onHidden = options?.onHidden;
    const hs = c.hiddenSize;
    ops.embed(batch.tokens, this.embedTokens, s.hidden);
    onHidden?.(0, s.hidden.subarray(0, n * hs));
    for (let l = 0; l < c.numLayers; l++) {
      if (skip?.has(l)) continue;
      const layer = this.layers[l];
      ops.rmsnorm(s.hidden, n, hs, layer.inputNorm, c.rmsNormEps, s.normed);
      this.attention(layer.attn, n, batch, kv[l]);
      ops.add(s.hidden, s.proj, s.hidden, n * hs);
      ops.rmsnorm(s.hidden, n, hs, layer.postNorm, c.rmsNormEps, s.normed);
      if (layer.moe && this.moeScratch) {
        layer.moe.run(ops, s.normed, n, s.proj, this.moeScratch);
      } else if (layer.mlp) {
        ops.matmul(s.normed, n, layer.mlp.gate, s.ffGate);
        ops.matmul(s.normed, n, layer.mlp.up, s.ffUp);
        ops.siluMul(s.ffGate, s.ffUp, s.ffGate, n * c.intermediateSize);
        ops.matmul(s.ffGate, n, layer.mlp.down, s.proj);
      }
      ops.add(s.hidden, s.proj, s.hidden, n * hs);
      onHidden?.(l + 1, s.hidden.subarray(0, n * hs));
    }
    return this.logits(batch.logitRows, options?.head);
  }

  /** MLA over s.normed into s.proj: writes each token's latent row into `kv`, attends in latent space. */
  private attention(w: MlaWeights, n: number, batch: ForwardBatch, kv: KvLayer): void {
    const c = this.config;
    const m = this.mla;
    const ops = this.ops;
    const s = this.scratch;
    const heads = c.numHeads;
    const nope = m.qkNopeHeadDim;
    const rope = m.qkRopeHeadDim;
    const rank = m.kvLoraRank;
    const qkHead = nope + rope;
    const row = rank + rope;
    // q [n, heads, nope + rope].
    if (w.q) {
      ops.matmul(s.normed, n, w.q, s.q);
    } else if (w.qA && w.qANorm && w.qB) {
      const lora = w.qA.rows;
      ops.matmul(s.normed, n, w.qA, s.qLow, w.qABias);
      ops.rmsnorm(s.qLow, n, lora, w.qANorm, LATENT_NORM_EPS, s.qLow);
      ops.matmul(s.qLow, n, w.qB, s.q);
    }
    // The latent row [kv_a_layernorm(c_kv) | rope(k_pe)] of each token.
    ops.matmul(s.normed, n, w.kvA, s.kvA, w.kvABias);
    for (let i = 0; i < n; i++) {
      s.cKv.set(s.kvA.subarray(i * row, i * row + rank), i * rank);
      s.kPe.set(s.kvA.subarray(i * row + rank, (i + 1) * row), i * rope);
    }
    ops.rmsnorm(s.cKv, n, rank, w.kvANorm, LATENT_NORM_EPS, s.cKv);
    ops.rope(s.kPe, n, 1, rope, batch.positions, c.ropeTheta, 'normal', this.ropeFreqs);
    for (let i = 0; i < n; i++) {
      s.latent.set(s.cKv.subarray(i * rank, (i + 1) * rank), i * row);
      s.latent.set(s.kPe.subarray(i * rope, (i + 1) * rope), i * row + rank);
    }
    ops.storeLatentKv(kv, s.latent, n, batch.slots);
    // Query rows in latent space: [W_UK_hᵀ · q_nope_h | rope(q_pe_h)] per head.
    for (let r = 0; r < n * heads; r++) s.qPe.set(s.q.subarray(r * qkHead + nope, (r + 1) * qkHead), r * rope);
    ops.rope(s.qPe, n, heads, rope, batch.positions, c.ropeTheta, 'normal', this.ropeFreqs);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < n; i++) s.headIn.set(s.q.subarray((i * heads + h) * qkHead, (i * heads + h) * qkHead + nope), i * nope);
      ops.matmul(s.headIn, n, w.uk[h], s.headOut);
      for (let i = 0; i < n; i++) {
        const dst = (i * heads + h) * row;
        s.qAbsorbed.set(s.headOut.subarray(i * rank, (i + 1) * rank), dst);
        s.qAbsorbed.set(s.qPe.subarray((i * heads + h) * rope, (i * heads + h + 1) * rope), dst + rank);
      }
    }
    ops.mlaAttention(s.qAbsorbed, kv, batch.seqs, { numHeads: heads, scale: m.softmaxScale, latentDim: rank }, s.attnLatent);
    // Each head's latent output through W_UV_h, then o_proj.
    const vd = m.vHeadDim;
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < n; i++) s.headIn.set(s.attnLatent.subarray((i * heads + h) * rank, (i * heads + h + 1) * rank), i * rank);
      ops.matmul(s.headIn, n, w.uv[h], s.headOut);
      for (let i = 0; i < n; i++) s.attnV.set(s.headOut.subarray(i * vd, (i + 1) * vd), (i * heads + h) * vd);
    }
    ops.matmul(s.attnV, n, w.o, s.proj, w.oBias);
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

  private checkBatch(batch: ForwardBatch, kv: KvLayer[]): void {
    const n = batch.tokens.length;
    const c = this.config;
    if (batch.positions.length !== n || batch.slots.length !== n) {
      throw new Error(`forward: ${n} tokens but ${batch.positions.length} positions and ${batch.slots.length} slots`);
    }
    if (kv.length !== c.numLayers) throw new Error(`forward: ${kv.length} KV layers for a ${c.numLayers}-layer model`);
    for (const r of batch.logitRows) if (r < 0 || r >= n) throw new Error(`forward: logit row ${r} outside the ${n}-token batch`);
    if (batch.inputEmbeddings) throw new Error(`forward: ${c.architecture} runs text only (no input embeddings)`);
    if (batch.mropePositions) throw new Error(`forward: ${c.architecture} runs text only (no M-RoPE positions)`);
    const width = this.mla.kvLoraRank + this.mla.qkRopeHeadDim;
    for (const layer of kv)
      if (layer.numKvHeads !== 1 || layer.headDim !== width)
        throw new Error(`forward: ${c.architecture} needs latent KV layers (1 head of ${width}; allocateKvCache with its config)`);
  }
}

const options = (): DecoderOptions => ({ qkvBias: 'none', oBiasIfPresent: true, qkNorm: false, slidingWindow: null });

export const deepseekV2: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  hfDefaults: DEEPSEEK_V2_DEFAULTS,
  hfConfig: deepseekV2Config,
  ggufConfig: ggufDeepseekV2Config,
  // Its layers are not the shared decoder layer's (MLA); these describe its attention for callers that ask.
  decoderOptions: options,
  create: (checkpoint, ops, placement) => new DeepseekV2Model(checkpoint, ops, placement),
};
