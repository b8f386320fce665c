// Normalize a Hugging Face config.json (+ generation_config.json) or GGUF metadata into ModelConfig.
//
// Architecture choice: config.json `architectures` (else `model_type`), or GGUF
// `general.architecture`, picks the row of ARCHITECTURES (architectures/index.ts) whose module runs it; where families read their configs
// differently (sliding window, q/k/v biases), the module says how. Nothing here looks at the name a
// model is served under.
import { ARCHITECTURES, architectureForGguf, architectureForHf } from './architectures/index.js';
import type { ArchitectureModule, ExpertConfigRules, GgufConfigReader } from './architectures/model.js';
import type { LongRopeConfig, ModelConfig } from './types.js';

type Json = Record<string, unknown>;

export class ModelConfigError extends Error {}

function unsupported(kind: string, where: string): ModelConfigError {
  const supported = ARCHITECTURES.map((a) => a.name).join(', ');
  return new ModelConfigError(`unsupported model architecture "${kind}" (${where}); supported: ${supported}`);
}

export interface HfConfigOptions {
  /** Parsed generation_config.json, when the model has one (its eos/bos ids are merged in). */
  generationConfig?: Json | null;
  /** Where the config came from, for error messages. */
  source?: string;
}

/** Build a ModelConfig from a parsed config.json. */
export function configFromHf(top: Json, opts: HfConfigOptions = {}): ModelConfig {
  const where = opts.source ?? 'config.json';
  // The model is named at the top level; a vision-language model's decoder sizes may sit under text_config.
  const modelType = typeof top.model_type === 'string' && top.model_type !== '' ? top.model_type : undefined;
  const classes = Array.isArray(top.architectures) ? top.architectures.filter((a): a is string => typeof a === 'string') : [];
  if (!modelType && classes.length === 0) throw new ModelConfigError(`${where}: neither "architectures" nor "model_type"`);
  const arch = architectureForHf(classes, modelType);
  if (!arch) throw unsupported(modelType ?? classes.join(', '), `${modelType ? 'model_type' : 'architectures'} in ${where}`);
  if (arch.module.wrapsTextConfig) return visionLanguageConfig(top, arch.name, opts);
  const nameOrPath = typeof top._name_or_path === 'string' && top._name_or_path ? top._name_or_path : null;
  const raw = withDefaults(withTextConfig(top), arch.module.hfDefaults);

  const num = (key: string, fallback?: number): number => {
    const v = raw[key];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(`${where}: missing or non-numeric "${key}"`);
  };
  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  const gen = opts.generationConfig ?? null;

  const window = typeof raw.sliding_window === 'number' ? raw.sliding_window : null;
  const windowRule = arch.module.hfSlidingWindow;
  const slidingWindow = windowRule === 'always' || (windowRule === 'use_sliding_window' && raw.use_sliding_window === true) ? window : null;

  const bos = tokenIdOf(raw.bos_token_id) ?? tokenIdOf(gen?.bos_token_id);
  const mtpLayers = num('num_nextn_predict_layers', 0);
  const numLayers = num('num_hidden_layers');
  // transformers 5 keeps rope_theta under rope_parameters.
  const ropeParameters = raw.rope_parameters as Json | undefined;
  const ropeTheta = typeof ropeParameters?.rope_theta === 'number' ? ropeParameters.rope_theta : 10000;
  const headDim = num('head_dim', hiddenSize / numHeads);
  const maxPositionEmbeddings = num('max_position_embeddings', 2048);
  // Partial rotary (Phi-3, Qwen3.5) and LongRoPE; M-RoPE sections split the rotary part's frequencies.
  const rotary = hfRotary(raw, headDim, maxPositionEmbeddings, where);
  const mropeSection = hfMropeSection(raw, rotary.rotaryDim ?? headDim, where);
  const family = familyFields(arch.module, raw, where);
  return {
    architecture: arch.name,
    hiddenSize,
    // A MoE config may carry no dense width (no dense layers, Qwen3.5-MoE): the experts' then.
    intermediateSize: num('intermediate_size', typeof raw.moe_intermediate_size === 'number' ? raw.moe_intermediate_size : undefined),
    numLayers,
    numHeads,
    numKvHeads: num('num_key_value_heads', numHeads),
    headDim,
    vocabSize: num('vocab_size'),
    ropeTheta: num('rope_theta', ropeTheta),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    // Every family here defaults to untied in transformers; the loader sets true when lm_head is absent.
    tieWordEmbeddings: raw.tie_word_embeddings === true,
    slidingWindow,
    attentionBias: arch.module.alwaysQkvBias || raw.attention_bias === true,
    maxPositionEmbeddings,
    bosTokenId: bos,
    eosTokenIds: unionIds(tokenIdsOf(raw.eos_token_id), tokenIdsOf(gen?.eos_token_id)),
    nameOrPath,
    // Only when set, so configs without multi-token prediction read exactly as before.
    ...(mtpLayers > 0 ? { numMtpLayers: mtpLayers } : {}),
    ...(arch.module.experts ? hfExperts(raw, arch.module.experts, numLayers, num, where) : {}),
    ...(mropeSection ? { mropeSection } : {}),
    ...(arch.module.keepsVisionConfig && isObject(top.vision_config) ? { visionHfConfig: top } : {}),
    ...rotary,
    ...hfGraniteScales(raw, where),
    ...family,
  };
}

/** The rope_scaling / rope_parameters objects of a config (transformers 4 / 5), those present. */
function ropeHolders(raw: Json): Json[] {
  return [raw.rope_scaling, raw.rope_parameters].filter((h): h is Json => !!h && typeof h === 'object' && !Array.isArray(h));
}

/**
 * Partial rotary (partial_rotary_factor, top level or under rope_scaling / rope_parameters:
 * rotaryDim = int(headDim · factor), as transformers) and LongRoPE (rope_type or type `longrope`,
 * or `su`, its name in early Phi-3 configs). Only set where they differ from plain RoPE.
 */
function hfRotary(raw: Json, headDim: number, maxPositions: number, where: string): Pick<ModelConfig, 'rotaryDim' | 'longRope'> {
  const holders = ropeHolders(raw);
  const factor = [raw.partial_rotary_factor, ...holders.map((h) => h.partial_rotary_factor)].find((v) => typeof v === 'number');
  let rotaryDim = headDim;
  if (typeof factor === 'number') {
    rotaryDim = Math.trunc(headDim * factor);
    if (!(factor > 0 && factor <= 1) || rotaryDim < 2 || rotaryDim % 2 !== 0) {
      throw new ModelConfigError(`${where}: partial_rotary_factor ${factor} of head_dim ${headDim} gives no even rotary dimension`);
    }
  }
  const out: Pick<ModelConfig, 'rotaryDim' | 'longRope'> = rotaryDim < headDim ? { rotaryDim } : {};
  const long = holders.find((h) => ['longrope', 'su'].includes(String(h.rope_type ?? h.type)));
  if (long) out.longRope = hfLongRope(raw, long, rotaryDim / 2, maxPositions, where);
  return out;
}

/** LongRoPE's factors and attention factor, as transformers' _compute_longrope_parameters reads them. */
function hfLongRope(raw: Json, rope: Json, pairs: number, maxPositions: number, where: string): LongRopeConfig {
  const factors = (key: string): number[] => {
    const v = rope[key];
    if (!Array.isArray(v) || v.length !== pairs || !v.every((x) => typeof x === 'number' && x > 0)) {
      throw new ModelConfigError(`${where}: LongRoPE ${key} must be ${pairs} positive numbers (one per rotary frequency)`);
    }
    return v as number[];
  };
  // The top-level original_max_position_embeddings (Phi-3), else the rope object's; with one, the
  // scale is max_position_embeddings / it, else the rope object's factor over max_position_embeddings.
  const original = [raw.original_max_position_embeddings, rope.original_max_position_embeddings].find((v) => typeof v === 'number');
  const originalMax = typeof original === 'number' ? original : maxPositions;
  if (!Number.isInteger(originalMax) || originalMax < 2) {
    throw new ModelConfigError(`${where}: LongRoPE original_max_position_embeddings ${originalMax} is not an integer ≥ 2`);
  }
  const scale = typeof original === 'number' ? maxPositions / originalMax : typeof rope.factor === 'number' ? rope.factor : 1;
  const given = rope.attention_factor;
  const attentionFactor = typeof given === 'number' ? given : scale <= 1 ? 1 : Math.sqrt(1 + Math.log(scale) / Math.log(originalMax));
  return {
    shortFactor: factors('short_factor'),
    longFactor: factors('long_factor'),
    originalMaxPositionEmbeddings: originalMax,
    attentionFactor,
  };
}

/** Granite's multipliers (embedding, residual, attention, logits), those the config sets. */
function hfGraniteScales(
  raw: Json,
  where: string,
): Pick<ModelConfig, 'embeddingMultiplier' | 'residualMultiplier' | 'attentionMultiplier' | 'logitsScaling'> {
  const out: Record<string, number> = {};
  const keys = [
    ['embedding_multiplier', 'embeddingMultiplier'],
    ['residual_multiplier', 'residualMultiplier'],
    ['attention_multiplier', 'attentionMultiplier'],
    ['logits_scaling', 'logitsScaling'],
  ] as const;
  for (const [key, field] of keys) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || (field === 'logitsScaling' && v === 0)) {
      throw new ModelConfigError(`${where}: "${key}" must be a finite number${field === 'logitsScaling' ? ' other than 0' : ''}`);
    }
    out[field] = v;
  }
  return out;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The family's own config fields (ArchitectureModule.hfConfig); what it cannot run is a ModelConfigError. */
function familyFields(module: ArchitectureModule, raw: Json, where: string): Partial<ModelConfig> {
  try {
    return module.hfConfig?.(raw) ?? {};
  } catch (e) {
    throw new ModelConfigError(`${where}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** `raw` with `defaults` (ArchitectureModule.hfDefaults) for the keys it does not have. */
function withDefaults(raw: Json, defaults: Readonly<Json> | undefined): Json {
  if (!defaults) return raw;
  const merged: Json = { ...raw };
  for (const [key, value] of Object.entries(defaults)) if (!(key in merged) || merged[key] === undefined) merged[key] = value;
  return merged;
}

/**
 * The config with its text_config's fields (transformers 5 vision-language models nest the
 * decoder's sizes there; older ones keep them at the top level) over the top level's, where set.
 */
function withTextConfig(top: Json): Json {
  const text = top.text_config;
  if (!text || typeof text !== 'object' || Array.isArray(text)) return top;
  const merged: Json = { ...top };
  for (const [key, value] of Object.entries(text as Json)) if (value !== null && value !== undefined) merged[key] = value;
  return merged;
}

/**
 * Qwen2-VL's `mrope_section` (under rope_scaling, or rope_parameters in transformers 5): the split
 * of the headDim / 2 rotary frequencies among temporal, height and width positions.
 */
function hfMropeSection(raw: Json, headDim: number, where: string): number[] | undefined {
  const holders = [raw.rope_scaling, raw.rope_parameters] as (Json | null | undefined)[];
  const section = holders.map((h) => (h && typeof h === 'object' ? h.mrope_section : undefined)).find((v) => v !== undefined);
  if (section === undefined) return undefined;
  const valid = Array.isArray(section) && section.every((v) => Number.isInteger(v) && (v as number) >= 0);
  const sum = valid ? (section as number[]).reduce((a, b) => a + b, 0) : NaN;
  if (sum !== headDim / 2) {
    throw new ModelConfigError(`${where}: mrope_section ${JSON.stringify(section)} does not split the ${headDim / 2} rotary frequencies`);
  }
  return section as number[];
}

/** transformers' LlamaConfig defaults: llava-hf configs give their Llama text_config only where it differs. */
const LLAMA_TEXT_DEFAULTS: Json = {
  vocab_size: 32000,
  hidden_size: 4096,
  intermediate_size: 11008,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-6,
};

/**
 * A vision-language wrapper's config (LLaVA): the language model is text_config, read as a config of
 * its own family (its model_type; llama when it has none, as transformers), with the wrapper's
 * tie_word_embeddings and name; the whole config.json stays with it for the vision encoder.
 */
function visionLanguageConfig(raw: Json, name: string, opts: HfConfigOptions): ModelConfig {
  const where = opts.source ?? 'config.json';
  const text = raw.text_config;
  if (!text || typeof text !== 'object' || Array.isArray(text)) throw new ModelConfigError(`${where}: no text_config object`);
  const t = text as Json;
  const textType = typeof t.model_type === 'string' && t.model_type !== '' ? t.model_type : 'llama';
  const textRaw = textType === 'llama' ? { ...LLAMA_TEXT_DEFAULTS, ...t, model_type: 'llama' } : t;
  const textConfig = configFromHf(textRaw, { ...opts, source: `${where} text_config` });
  if (textConfig.textArchitecture !== undefined) throw new ModelConfigError(`${where}: text_config is itself a vision-language model`);
  const nameOrPath = typeof raw._name_or_path === 'string' && raw._name_or_path ? raw._name_or_path : textConfig.nameOrPath;
  return {
    ...textConfig,
    architecture: name,
    tieWordEmbeddings: typeof raw.tie_word_embeddings === 'boolean' ? raw.tie_word_embeddings : textConfig.tieWordEmbeddings,
    nameOrPath,
    textArchitecture: textConfig.architecture,
    visionHfConfig: raw,
  };
}

type ExpertFields = Pick<
  ModelConfig,
  'numExperts' | 'numExpertsPerTok' | 'moeIntermediateSize' | 'normTopkProb' | 'moeLayers' | 'sharedExpertIntermediateSize'
>;

/**
 * The routed experts of a MoE family's config.json (nothing when it names no experts). A layer i is
 * MoE when (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers (Qwen3-MoE; both
 * absent: every layer, as Mixtral).
 */
function hfExperts(
  raw: Json,
  rules: ExpertConfigRules,
  numLayers: number,
  num: (key: string, fallback?: number) => number,
  where: string,
): ExpertFields {
  const numExperts = num('num_experts', num('num_local_experts', 0));
  if (numExperts <= 0) return {};
  const numExpertsPerTok = num('num_experts_per_tok');
  if (!Number.isInteger(numExpertsPerTok) || numExpertsPerTok < 1 || numExpertsPerTok > numExperts) {
    throw new ModelConfigError(`${where}: num_experts_per_tok ${numExpertsPerTok} is not between 1 and the ${numExperts} experts`);
  }
  const step = num('decoder_sparse_step', 1);
  if (!Number.isInteger(step) || step < 1) throw new ModelConfigError(`${where}: decoder_sparse_step ${step} is not a positive integer`);
  const denseOnly = new Set(Array.isArray(raw.mlp_only_layers) ? raw.mlp_only_layers : []);
  const shared = rules.hfSharedWidthKey ? num(rules.hfSharedWidthKey, 0) : 0;
  return {
    numExperts,
    numExpertsPerTok,
    moeIntermediateSize: num(rules.hfWidthKey),
    normTopkProb: rules.normTopkProb === 'always' || raw.norm_topk_prob === true,
    moeLayers: Array.from({ length: numLayers }, (_, i) => !denseOnly.has(i) && (i + 1) % step === 0),
    ...(shared > 0 ? { sharedExpertIntermediateSize: shared } : {}),
  };
}

export interface GgufConfigOptions {
  /** Whether the file has its own output.weight; without one the embeddings are tied. */
  hasOutputWeight: boolean;
  /** Rows of token_embd, used when the metadata names no vocabulary size. */
  embeddingRows?: number;
  /** MoE: the layers whose router (blk.N.ffn_gate_inp.weight) the file holds; absent: every layer. */
  routerLayers?: ReadonlySet<number>;
  /** The file's tensor names (llama.cpp's), for families whose config depends on which are present. */
  tensorNames?: Iterable<string>;
  /** A tensor's values as f32 (small tensors the config reads: Phi-3's rope_factors_*), undefined when absent. */
  tensorValues?: (ggufName: string) => Float32Array | undefined;
  source?: string;
}

/** Build a ModelConfig from GGUF metadata (`<arch>.*`, `tokenizer.ggml.*`, `general.*`). */
export function configFromGguf(meta: Json, opts: GgufConfigOptions): ModelConfig {
  const where = opts.source ?? 'GGUF metadata';
  const arch = typeof meta['general.architecture'] === 'string' ? (meta['general.architecture'] as string) : undefined;
  if (!arch) throw new ModelConfigError(`${where}: no general.architecture`);
  const expertCount = scalarOf(meta[`${arch}.expert_count`], `${arch}.expert_count`, where) ?? 0;
  const row = architectureForGguf(arch, expertCount > 0);
  if (!row) throw unsupported(arch, `general.architecture in ${where}`);
  const name = typeof meta['general.name'] === 'string' ? (meta['general.name'] as string) : null;

  const perLayer = new Set(row.module.ggufPerLayerKeys ?? []);
  const num = (key: string, fallback?: number): number => {
    const v = scalarOf(meta[`${arch}.${key}`], `${arch}.${key}`, where, perLayer.has(key));
    if (v !== undefined) return v;
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(`${where}: missing ${arch}.${key}`);
  };
  const hiddenSize = num('embedding_length');
  const numHeads = num('attention.head_count');
  const headDim = num('attention.key_length', hiddenSize / numHeads);
  const ropeDims = scalarOf(meta[`${arch}.rope.dimension_count`], 'rope.dimension_count', where);
  const tokens = meta['tokenizer.ggml.tokens'];
  const vocabFallback = Array.isArray(tokens) ? tokens.length : opts.embeddingRows;
  const window = scalarOf(meta[`${arch}.attention.sliding_window`], 'sliding_window', where);
  const eos = unionIds(tokenIdsOf(meta['tokenizer.ggml.eos_token_id']), tokenIdsOf(meta['tokenizer.ggml.eot_token_id']));
  const numLayers = num('block_count');
  const experts =
    expertCount > 0 && row.module.experts ? ggufExperts(meta, arch, expertCount, numLayers, opts.routerLayers, num, where) : {};
  const sharedWidth = scalarOf(meta[`${arch}.expert_shared_feed_forward_length`], 'expert_shared_feed_forward_length', where) ?? 0;

  const common: ModelConfig = {
    architecture: row.name,
    hiddenSize,
    // A MoE file may carry no dense width (no dense layers): the experts' then.
    intermediateSize: num('feed_forward_length', experts.moeIntermediateSize),
    numLayers,
    numHeads,
    numKvHeads: num('attention.head_count_kv', numHeads),
    headDim,
    vocabSize: num('vocab_size', vocabFallback),
    ropeTheta: num('rope.freq_base', 10000),
    rmsNormEps: num('attention.layer_norm_rms_epsilon', 1e-5),
    tieWordEmbeddings: !opts.hasOutputWeight,
    // Phi-3's converter writes 0 for none.
    slidingWindow: window !== undefined && window > 0 ? window : null,
    attentionBias: row.module.alwaysQkvBias,
    maxPositionEmbeddings: num('context_length', 2048),
    bosTokenId: tokenIdOf(meta['tokenizer.ggml.bos_token_id']),
    eosTokenIds: eos,
    nameOrPath: name,
    ...experts,
    ...ggufGraniteScales(meta, arch, where),
  };
  const config = { ...common, ...ggufFamilyFields(row.module, meta, arch, common, opts, where) };
  // A shared expert only where the family runs it: families reading their own expert keys (no ExpertConfigRules:
  // DeepSeek-V2, Nemotron-H) take it there; of the others, those whose ggufConfig sets its width (Qwen3.5-MoE).
  if (sharedWidth > 0 && row.module.experts && config.sharedExpertIntermediateSize !== sharedWidth)
    throw new ModelConfigError(`${where}: shared experts (${arch}.expert_shared_feed_forward_length) in GGUF files are not supported`);
  // Partial rotary only where the family reads it (its ggufConfig sets rotaryDim, or MLA's rope part); else it would be ignored.
  if (ropeDims !== undefined && ropeDims !== config.headDim && ropeDims !== config.rotaryDim && ropeDims !== config.mla?.qkRopeHeadDim) {
    throw new ModelConfigError(
      `${where}: partial rotary embeddings (${arch}.rope.dimension_count ${ropeDims} of head size ${config.headDim}) are not supported`,
    );
  }
  return config;
}

/** The family's own GGUF keys (ArchitectureModule.ggufConfig) over the common fields; what it cannot run is a ModelConfigError. */
function ggufFamilyFields(
  module: ArchitectureModule,
  meta: Json,
  arch: string,
  common: ModelConfig,
  opts: GgufConfigOptions,
  where: string,
): Partial<ModelConfig> {
  if (!module.ggufConfig) return {};
  const names = new Set(opts.tensorNames ?? []);
  const reader: GgufConfigReader = {
    arch,
    num: (key) => scalarOf(meta[`${arch}.${key}`], `${arch}.${key}`, where, (module.ggufPerLayerKeys ?? []).includes(key)),
    value: (key) => meta[`${arch}.${key}`],
    hasTensor: (name) => names.has(name),
    tensor: (name) => opts.tensorValues?.(name),
  };
  try {
    return module.ggufConfig(reader, common);
  } catch (e) {
    throw new ModelConfigError(`${where}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** llama.cpp's Granite multipliers (`<arch>.embedding_scale`, `.residual_scale`, `.attention.scale`, `.logit_scale`), those the file sets. */
function ggufGraniteScales(
  meta: Json,
  arch: string,
  where: string,
): Pick<ModelConfig, 'embeddingMultiplier' | 'residualMultiplier' | 'attentionMultiplier' | 'logitsScaling'> {
  const keys = [
    ['embedding_scale', 'embeddingMultiplier'],
    ['residual_scale', 'residualMultiplier'],
    ['attention.scale', 'attentionMultiplier'],
    ['logit_scale', 'logitsScaling'],
  ] as const;
  const out: Record<string, number> = {};
  for (const [key, field] of keys) {
    const v = scalarOf(meta[`${arch}.${key}`], `${arch}.${key}`, where);
    if (v !== undefined) out[field] = v;
  }
  return out;
}

/**
 * The routed experts of a MoE GGUF: the layers with a router are MoE (every layer, as llama.cpp
 * builds qwen3moe and Mixtral, when the loader does not say), and the top-k weights are
 * renormalised unless `<arch>.expert_weights_norm` says otherwise (llama.cpp renormalises for both).
 */
function ggufExperts(
  meta: Json,
  arch: string,
  numExperts: number,
  numLayers: number,
  routerLayers: ReadonlySet<number> | undefined,
  num: (key: string, fallback?: number) => number,
  where: string,
): ExpertFields {
  const numExpertsPerTok = num('expert_used_count');
  if (!Number.isInteger(numExpertsPerTok) || numExpertsPerTok < 1 || numExpertsPerTok > numExperts) {
    throw new ModelConfigError(`${where}: ${arch}.expert_used_count ${numExpertsPerTok} is not between 1 and the ${numExperts} experts`);
  }
  const norm = meta[`${arch}.expert_weights_norm`];
  return {
    numExperts,
    numExpertsPerTok,
    // Mixtral's converter writes the experts' width as the dense one.
    moeIntermediateSize:
      meta[`${arch}.expert_feed_forward_length`] !== undefined ? num('expert_feed_forward_length') : num('feed_forward_length'),
    normTopkProb: typeof norm === 'boolean' ? norm : true,
    moeLayers: Array.from({ length: numLayers }, (_, i) => routerLayers?.has(i) ?? true),
  };
}

/**
 * A GGUF numeric value; per-layer arrays are accepted when all layers agree, or as their largest entry
 * where the family reads the array itself (`perLayer`: ArchitectureModule.ggufPerLayerKeys).
 */
function scalarOf(v: unknown, key: string, where: string, perLayer = false): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v && typeof v === 'object' && 'length' in v) {
    const arr = Array.from(v as ArrayLike<number>, Number);
    if (arr.length > 0 && arr.every((x) => x === arr[0])) return arr[0];
    if (arr.length > 0 && perLayer) return Math.max(...arr);
    throw new ModelConfigError(`${where}: ${key} varies per layer (${arr.join(',')}), which is not supported`);
  }
  return undefined;
}

/** A token id, or null for absent / negative / the 0xFFFFFFFF "unset" marker GGUF writers use. */
function tokenIdOf(v: unknown): number | null {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= 0xffffffff) return null;
  return v;
}

function tokenIdsOf(v: unknown): number[] {
  if (Array.isArray(v)) return v.map(tokenIdOf).filter((x): x is number => x !== null);
  const one = tokenIdOf(v);
  return one === null ? [] : [one];
}

function unionIds(...lists: number[][]): number[] {
  return [...new Set(lists.flat())];
}
