// The vision side of a LLaVA config.json (transformers' LlavaConfig): the tower's vision_config,
// which hidden states feed the projector, and the projector itself. Defaults are LlavaConfig's.
import type { GeluKind } from '../../kernels/ops.js';
import { geluKindOf, visionTowerConfig, type VisionTowerConfig } from './vision-config.js';
import type { ImageTokenLayout } from './types.js';

type Json = Record<string, unknown>;

export interface LlavaVisionConfig {
  readonly tower: VisionTowerConfig;
  /**
   * The tower's hidden states the projector reads, transformers' numbering resolved (0 … numLayers:
   * vision_feature_layer −1 is the last layer's output, before the post-LayerNorm; −2 the one before),
   * concatenated per row in this order.
   */
  readonly featureLayers: readonly number[];
  /** vision_feature_select_strategy 'default' drops each hidden state's first row (CLIP's class row); 'full' keeps all. */
  readonly dropFirstRow: boolean;
  readonly projectorAct: GeluKind;
  /** multimodal_projector_bias. */
  readonly projectorBias: boolean;
  readonly imageTokenId: number;
}

export function llavaVisionConfig(raw: Readonly<Json>, where = 'config.json'): LlavaVisionConfig {
  const vision = raw.vision_config;
  if (!vision || typeof vision !== 'object' || Array.isArray(vision)) throw new Error(`${where}: no vision_config object`);
  const tower = visionTowerConfig(vision as Json, where);
  const layerKey = raw.vision_feature_layer ?? -2;
  const layers = Array.isArray(layerKey) ? layerKey : [layerKey];
  const featureLayers = layers.map((l) => {
    const i = typeof l === 'number' && Number.isInteger(l) ? (l < 0 ? tower.numLayers + 1 + l : l) : NaN;
    if (!(i >= 0 && i <= tower.numLayers))
      throw new Error(`${where}: vision_feature_layer ${JSON.stringify(l)} outside the tower's ${tower.numLayers} layers`);
    return i;
  });
  const strategy = raw.vision_feature_select_strategy ?? 'default';
  if (strategy !== 'default' && strategy !== 'full')
    throw new Error(`${where}: vision_feature_select_strategy ${JSON.stringify(strategy)} is not supported`);
  const token = raw.image_token_index ?? raw.image_token_id ?? 32000;
  if (typeof token !== 'number' || !Number.isInteger(token) || token < 0)
    throw new Error(`${where}: image_token_index ${JSON.stringify(token)}`);
  return {
    tower,
    featureLayers,
    dropFirstRow: strategy === 'default',
    projectorAct: geluKindOf(raw.projector_hidden_act ?? 'gelu', `${where}: projector_hidden_act`),
    projectorBias: raw.multimodal_projector_bias !== false,
    imageTokenId: token,
  };
}

/**
 * LLaVA's prompt layout: every image, whatever its size (it is resized to the tower's square), is the
 * tower's rows: ⌊imageSize / patchSize⌋² patches, plus CLIP's class row unless the 'default' strategy drops it.
 */
export function llavaTokenLayout(config: LlavaVisionConfig): ImageTokenLayout {
  const { tower } = config;
  const side = Math.floor(tower.imageSize / tower.patchSize);
  const numTokens = side * side + (tower.family === 'clip' ? 1 : 0) - (config.dropFirstRow ? 1 : 0);
  return { imageTokenId: config.imageTokenId, tokensFor: () => ({ numTokens }) };
}
