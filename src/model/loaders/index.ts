// Entry point for loading a checkpoint from disk: a Hugging Face directory or a single .gguf file.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkpoint } from '../types.js';
import { loadGgufCheckpoint } from './gguf.js';
import { loadSafetensorsDirectory } from './safetensors.js';

export { loadSafetensorsCheckpoint, parseSafetensors, type SafetensorsCheckpointSpec } from './safetensors.js';
export { loadGgufCheckpoint, hfNameOf } from './gguf.js';
export { loadFileBytes } from './file-bytes.js';

export interface LoadOptions {
  /** true: sequential reads into memory (default loader); false: memory-map via the native addon. */
  fastLoad: boolean;
}

/**
 * Load `path`: a .gguf file, a Hugging Face directory (config.json + safetensors), or a
 * directory holding exactly one .gguf file and no config.json.
 */
export function loadCheckpoint(path: string, opts: LoadOptions): Checkpoint {
  if (!existsSync(path)) throw new Error(`${path}: no such file or directory`);
  if (!statSync(path).isDirectory()) {
    if (path.toLowerCase().endsWith('.gguf')) return loadGgufCheckpoint(path, opts.fastLoad);
    throw new Error(`${path}: not a model (expected a .gguf file or a Hugging Face model directory)`);
  }
  if (existsSync(join(path, 'config.json'))) return loadSafetensorsDirectory(path, opts.fastLoad);
  const ggufs = readdirSync(path).filter((f) => f.toLowerCase().endsWith('.gguf'));
  if (ggufs.length === 1) return loadGgufCheckpoint(join(path, ggufs[0]), opts.fastLoad);
  if (ggufs.length > 1) throw new Error(`${path}: several .gguf files (${ggufs.join(', ')}); pass one of them`);
  throw new Error(`${path}: no config.json and no .gguf file`);
}
