// Entry point for loading a checkpoint from disk: a Hugging Face directory or a single .gguf file.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkpoint, LoadProgress } from '../types.js';
import { loadGgufCheckpoint, type PackedCacheUse } from './gguf.js';
import { loadSafetensorsDirectory } from './safetensors.js';

export { loadSafetensorsCheckpoint, parseSafetensors, type SafetensorsCheckpointSpec } from './safetensors.js';
export { loadGgufCheckpoint, hfNameOf, type PackedCacheUse } from './gguf.js';
export { PackedWeightCache, packedCacheFile, packedCacheRoot, type PackedCacheReport } from './packed-cache.js';
export { loadFileBytes } from './file-bytes.js';

export interface LoadOptions {
  /**
   * GGUF: true packs tensor by tensor from the mapped file, releasing each source range (flat
   * memory); false maps it plainly. Safetensors: true reads the files into memory, false maps them.
   */
  fastLoad: boolean;
  /** Called as the model takes the tensors (GGUF). */
  onProgress?: (p: LoadProgress) => void;
  /** GGUF with fastLoad: the packed-weights cache to use (packed-cache.ts); absent: none. */
  packedCache?: PackedCacheUse;
}

/**
 * Load `path`: a .gguf file, a Hugging Face directory (config.json + safetensors), or a
 * directory holding exactly one .gguf file and no config.json.
 */
export function loadCheckpoint(path: string, opts: LoadOptions): Checkpoint {
  if (!existsSync(path)) throw new Error(`${path}: no such file or directory`);
  if (!statSync(path).isDirectory()) {
    if (path.toLowerCase().endsWith('.gguf')) return loadGgufCheckpoint(path, opts.fastLoad, opts.onProgress, opts.packedCache);
    throw new Error(`${path}: not a model (expected a .gguf file or a Hugging Face model directory)`);
  }
  if (existsSync(join(path, 'config.json'))) return loadSafetensorsDirectory(path, opts.fastLoad);
  const ggufs = readdirSync(path).filter((f) => f.toLowerCase().endsWith('.gguf'));
  if (ggufs.length === 1) return loadGgufCheckpoint(join(path, ggufs[0]), opts.fastLoad, opts.onProgress, opts.packedCache);
  if (ggufs.length > 1) throw new Error(`${path}: several .gguf files (${ggufs.join(', ')}); pass one of them`);
  throw new Error(`${path}: no config.json and no .gguf file`);
}
