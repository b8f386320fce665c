// The vision side of a Qwen2-VL config.json (transformers' Qwen2VLConfig): vision_config (HF
// Qwen2VLVisionConfig, its defaults for keys a config leaves out) and the image token id; and the
// prompt layout, which needs only these and preprocessor_config.json.
import type { GeluKind } from '../../kernels/ops.js';
import { geluKindOf } from './vision-config.js';
import type { ImageTokenLayout } from './types.js';
import { qwen2VlPreprocessing, smartResize, type Qwen2VlPreprocessing } from './qwen2-vl-preprocess.js';

type Json = Record<string, unknown>;

export interface Qwen2VlVisionConfig {
  readonly depth: number;
  /** Width of the tower's rows (embed_dim). */
  readonly embedDim: number;
  readonly numHeads: number;
  /** fc1's width: int(embed_dim · mlp_ratio), as transformers truncates it. */
  readonly mlpDim: number;
  readonly hiddenAct: GeluKind;
  readonly inChannels: number;
  readonly patchSize: number;
  /** merge × merge neighbouring patches become one image token (PatchMerger). */
  readonly spatialMergeSize: number;
  readonly temporalPatchSize: number;
  /** What the merger outputs: the language model's hidden size (vision_config.hidden_size). */
  readonly outDim: number;
  readonly imageTokenId: number;
}

// Qwen2VLVisionConfig's defaults (hidden_size: Qwen2-VL-7B's text width).
const DEFAULTS: Json = {
  depth: 32,
  embed_dim: 1280,
  hidden_size: 3584,
  hidden_act: 'quick_gelu',
  mlp_ratio: 4,
  num_heads: 16,
  // Qwen's own configs write in_chans, which transformers ignores (in_channels stays 3); so does svc.
  in_channels: 3,
  patch_size: 14,
  spatial_merge_size: 2,
  temporal_patch_size: 2,
};

/** Qwen2-VL's <|image_pad|>. */
const DEFAULT_IMAGE_TOKEN_ID = 151655;

export function qwen2VlVisionConfig(raw: Readonly<Json>, where = 'config.json'): Qwen2VlVisionConfig {
  const vision = raw.vision_config;
  if (!vision || typeof vision !== 'object' || Array.isArray(vision)) throw new Error(`${where}: no vision_config object`);
  const c = { ...DEFAULTS, ...(vision as Json) };
  const int = (key: string): number => {
    const v = c[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`${where}: vision_config.${key} is not a positive integer`);
    return v;
  };
  const ratio = c.mlp_ratio;
  if (typeof ratio !== 'number' || !(ratio > 0)) throw new Error(`${where}: vision_config.mlp_ratio is not a positive number`);
  const token = raw.image_token_id ?? DEFAULT_IMAGE_TOKEN_ID;
  if (typeof token !== 'number' || !Number.isInteger(token) || token < 0)
    throw new Error(`${where}: image_token_id ${JSON.stringify(token)}`);
  const config: Qwen2VlVisionConfig = {
    depth: int('depth'),
    embedDim: int('embed_dim'),
    numHeads: int('num_heads'),
    mlpDim: Math.trunc(int('embed_dim') * ratio),
    hiddenAct: geluKindOf(c.hidden_act, `${where}: vision_config.hidden_act`),
    inChannels: int('in_channels'),
    patchSize: int('patch_size'),
    spatialMergeSize: int('spatial_merge_size'),
    temporalPatchSize: int('temporal_patch_size'),
    outDim: int('hidden_size'),
    imageTokenId: token,
  };
  // The 2-D rotary turns headDim / 4 frequencies by the row and as many by the column.
  const headDim = config.embedDim / config.numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0) {
    throw new Error(`${where}: vision embed_dim ${config.embedDim} over ${config.numHeads} heads is not a multiple of 4 per head`);
  }
  // Images are RGB (DecodedImage); transformers' processor makes 3 channels too.
  if (config.inChannels !== 3) throw new Error(`${where}: vision_config.in_channels ${config.inChannels} (only RGB, 3, is supported)`);
  return config;
}

/** The preprocessing must cut images into the patches and merge windows the tower was built for. */
export function checkPreprocessingFits(p: Qwen2VlPreprocessing, v: Qwen2VlVisionConfig, where: string): void {
  const pairs: [string, number, number][] = [
    ['patch_size', p.patchSize, v.patchSize],
    ['merge_size', p.mergeSize, v.spatialMergeSize],
    ['temporal_patch_size', p.temporalPatchSize, v.temporalPatchSize],
  ];
  for (const [key, ours, tower] of pairs) {
    if (ours !== tower) throw new Error(`${where}: ${key} ${ours} does not match the vision tower's ${tower}`);
  }
}

/**
 * Qwen2-VL's prompt layout: an image resized by smart_resize to h × w pixels (multiples of
 * patch · merge) is (h / patch / merge) × (w / patch / merge) tokens, on that merged grid (t = 1).
 */
export function qwen2VlTokenLayout(config: Qwen2VlVisionConfig, preprocessing: Qwen2VlPreprocessing): ImageTokenLayout {
  const unit = preprocessing.patchSize * preprocessing.mergeSize;
  return {
    imageTokenId: config.imageTokenId,
    tokensFor: (width, height) => {
      const size = preprocessing.resize
        ? smartResize(height, width, unit, preprocessing.minPixels, preprocessing.maxPixels)
        : { height, width };
      if (size.height % unit !== 0 || size.width % unit !== 0) {
        throw new RangeError(`Qwen2-VL: a ${width}×${height} image is not whole ${unit}-pixel merge windows (do_resize is off)`);
      }
      const grid = { t: 1, h: size.height / unit, w: size.width / unit };
      return { numTokens: grid.t * grid.h * grid.w, grid };
    },
  };
}

/** The layout from config.json (raw) and preprocessor_config.json (null: the processor's defaults). */
export function qwen2VlLayoutOf(raw: Readonly<Json>, preprocessorConfig: Json | null, source: string): ImageTokenLayout {
  const vision = qwen2VlVisionConfig(raw, `${source}: config.json`);
  const p = qwen2VlPreprocessing(preprocessorConfig, `${source}: preprocessor_config.json`);
  checkPreprocessingFits(p, vision, `${source}: preprocessor_config.json`);
  return qwen2VlTokenLayout(vision, p);
}
