// Vision encoders of vision-language checkpoints: what turns a decoded image into the rows its
// placeholder tokens take in the language model (ForwardBatch.inputEmbeddings).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint, ModelConfig } from '../types.js';
import type { ImageTokenLayout, VisionEncoder } from './types.js';
import { LlavaVisionEncoder } from './llava-encoder.js';
import { llavaTokenLayout, llavaVisionConfig } from './llava-config.js';
import { Qwen2VlVisionEncoder } from './qwen2-vl-encoder.js';
import { qwen2VlLayoutOf } from './qwen2-vl-config.js';

export type { DecodedImage, ImageEmbeddings, ImageTokenLayout, ImageTokens, VisionEncoder } from './types.js';
export { LlavaVisionEncoder } from './llava-encoder.js';
export { Qwen2VlVisionEncoder } from './qwen2-vl-encoder.js';

/** preprocessor_config.json beside a Hugging Face checkpoint (`source` its directory), or null when there is none. */
export function readPreprocessorConfig(source: string): Record<string, unknown> | null {
  const path = join(source, 'preprocessor_config.json');
  if (!existsSync(source) || !statSync(source).isDirectory() || !existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${path}: bad JSON (${(err as Error).message})`, { cause: err });
  }
}

/**
 * The checkpoint's vision encoder (tower, projector and preprocessing), its weights prepared for
 * `ops` once, here; null for a text-only checkpoint. `preprocessorConfig`: the parsed
 * preprocessor_config.json (default: the one beside the checkpoint; null: the tower family's defaults).
 */
export function createVisionEncoder(
  checkpoint: Checkpoint,
  ops: Ops,
  preprocessorConfig: Record<string, unknown> | null = readPreprocessorConfig(checkpoint.source),
): VisionEncoder | null {
  const config = checkpoint.config;
  if (config.visionHfConfig === undefined) return null;
  if (config.architecture === 'llava') return new LlavaVisionEncoder(checkpoint, ops, preprocessorConfig);
  if (config.architecture === 'qwen2_vl') return new Qwen2VlVisionEncoder(checkpoint, ops, preprocessorConfig);
  throw new Error(`${checkpoint.source}: no vision encoder for architecture ${config.architecture}`);
}

/**
 * The prompt layout of the model's images (what the main thread needs to expand image
 * placeholders), from config.json and preprocessor_config.json alone; null for a text-only model.
 * Equals createVisionEncoder(...).layout of the same checkpoint.
 */
export function imageTokenLayout(
  config: ModelConfig,
  preprocessorConfig: Record<string, unknown> | null,
  source: string,
): ImageTokenLayout | null {
  if (config.visionHfConfig === undefined) return null;
  if (config.architecture === 'llava') return llavaTokenLayout(llavaVisionConfig(config.visionHfConfig, `${source}: config.json`));
  // Its images' token counts follow their sizes, through the processor's resize.
  if (config.architecture === 'qwen2_vl') return qwen2VlLayoutOf(config.visionHfConfig, preprocessorConfig, source);
  throw new Error(`${source}: no vision encoder for architecture ${config.architecture}`);
}
