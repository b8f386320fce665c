// Safetensors checkpoints: single files or shards listed by a *.safetensors.index.json, plus the
// config.json beside them. Tensors are zero-copy views of the file bytes in their stored dtype.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Checkpoint, DType, Tensor } from '../types.js';
import { configFromHf } from '../model-config.js';
import { ALL_DTYPES, WEIGHT_DTYPES } from '../../kernels/dtypes.js';
import { bytesView, loadFileBytes, type FileView } from './file-bytes.js';
import { normalizeMultimodalNames } from './multimodal-names.js';
import { addMxfp4Tensors, type RawU8Tensor } from './mxfp4.js';
import { normalizeStateSpaceNames } from './state-space-names.js';

/** safetensors dtype names → the weight dtypes stored under them (their rows in WEIGHT_DTYPES name them). */
const SAFETENSORS_DTYPES: Record<string, { dtype: DType; size: number }> = Object.fromEntries(
  ALL_DTYPES.flatMap((dtype) => {
    const t = WEIGHT_DTYPES[dtype];
    return t.safetensors === null ? [] : [[t.safetensors, { dtype, size: t.blockBytes }]];
  }),
);
const SAFETENSORS_SUPPORTED = Object.keys(SAFETENSORS_DTYPES).join(', ');

export interface SafetensorsFile {
  tensors: Map<string, Tensor>;
  /** The `__metadata__` string map of the header ({} when absent). */
  metadata: Record<string, string>;
  /** U8 tensors (MXFP4 _blocks / _scales, dequantized once all shards are read: mxfp4.ts). */
  u8: Map<string, RawU8Tensor>;
}

/** Parse a safetensors file held in memory; `path` is only for error messages. */
export function parseSafetensors(bytes: Uint8Array | FileView, path: string): SafetensorsFile {
  const file = bytes instanceof Uint8Array ? bytesView(bytes) : bytes;
  if (file.size < 8) throw new Error(`${path}: truncated safetensors header (file has ${file.size} bytes, needs at least 8)`);
  const lead = file.view(0, 8);
  const headerLen = Number(new DataView(lead.buffer, lead.byteOffset, 8).getBigUint64(0, true));
  if (8 + headerLen > file.size) {
    throw new Error(`${path}: truncated safetensors header (header claims ${headerLen} bytes, file has ${file.size})`);
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(file.view(8, headerLen)));
  } catch (err) {
    throw new Error(`${path}: bad safetensors JSON header (${(err as Error).message})`, { cause: err });
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) {
    throw new Error(`${path}: bad safetensors JSON header (not an object)`);
  }
  const dataStart = 8 + headerLen;
  const tensors = new Map<string, Tensor>();
  let metadata: Record<string, string> = {};
  const u8 = new Map<string, RawU8Tensor>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = (entry ?? {}) as Record<string, string>;
      continue;
    }
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e?.dtype !== 'string' || !Array.isArray(e.shape) || !Array.isArray(e.data_offsets) || e.data_offsets.length !== 2) {
      throw new Error(`${path}: bad safetensors JSON header (tensor ${name} lacks dtype/shape/data_offsets)`);
    }
    const kind = e.dtype === 'U8' ? { dtype: null, size: 1 } : SAFETENSORS_DTYPES[e.dtype];
    if (!kind) throw new Error(`${path}: tensor ${name} has unsupported dtype ${e.dtype} (supported: ${SAFETENSORS_SUPPORTED})`);
    const shape = e.shape as number[];
    const [begin, end] = e.data_offsets as number[];
    const expected = shape.reduce((a, b) => a * b, 1) * kind.size;
    if (!(begin >= 0 && end >= begin) || end - begin !== expected) {
      throw new Error(
        `${path}: tensor ${name} data_offsets [${begin}, ${end}] do not match shape [${shape}] of ${e.dtype} (${expected} bytes)`,
      );
    }
    if (dataStart + end > file.size) {
      throw new Error(`${path}: tensor ${name} data lies beyond end of file (ends at byte ${dataStart + end}, file has ${file.size})`);
    }
    const data = alignedView(file, dataStart + begin, dataStart + end, kind.size);
    if (kind.dtype === null) u8.set(name, { name, shape, data });
    else tensors.set(name, { name, dtype: kind.dtype, shape, data });
  }
  return { tensors, metadata, u8 };
}

/**
 * The bytes [begin, end) as a view, copied to a fresh buffer when not aligned to the element size,
 * so kernels can always overlay a Float32Array / Uint16Array on a tensor's data.
 */
function alignedView(file: FileView, begin: number, end: number, elementSize: number): Uint8Array {
  const view = file.view(begin, end - begin);
  return view.byteOffset % elementSize === 0 ? view : view.slice();
}

export interface SafetensorsCheckpointSpec {
  /** The .safetensors files, or one *.safetensors.index.json naming the shards. */
  files: string[];
  configPath: string;
  /** generation_config.json, when present (adds eos ids). */
  generationConfigPath?: string | null;
  /** Reported as Checkpoint.source; defaults to the config's directory. */
  source?: string;
  fastLoad: boolean;
}

/** Load a safetensors checkpoint from explicit paths (the fixtures use non-standard file names). */
export function loadSafetensorsCheckpoint(spec: SafetensorsCheckpointSpec): Checkpoint {
  const rawConfig = readJson(spec.configPath);
  const generationConfig = spec.generationConfigPath ? readJson(spec.generationConfigPath) : null;
  const config = configFromHf(rawConfig, { generationConfig, source: spec.configPath });

  const tensors = new Map<string, Tensor>();
  const aliases: Record<string, string> = {};
  const u8 = new Map<string, RawU8Tensor>();
  for (const file of expandShards(spec.files)) {
    const parsed = parseSafetensors(loadFileBytes(file, spec.fastLoad), file);
    for (const [name, t] of parsed.tensors) {
      if (tensors.has(name)) throw new Error(`${file}: tensor ${name} appears in more than one shard`);
      tensors.set(name, t);
    }
    for (const [name, t] of parsed.u8) u8.set(name, t);
    Object.assign(aliases, parsed.metadata);
  }
  // MXFP4 experts (GPT-OSS) become bf16 tensors of the unquantized names.
  addMxfp4Tensors(u8, tensors, spec.source ?? spec.configPath);
  applyAliases(tensors, aliases);
  normalizeMultimodalNames(tensors, spec.source ?? spec.configPath);
  normalizeStateSpaceNames(tensors);

  // Tied embeddings: expose the one matrix under both names; HF ties lm_head to embed_tokens.
  const embed = tensors.get('model.embed_tokens.weight');
  const head = tensors.get('lm_head.weight');
  if (embed && (config.tieWordEmbeddings || !head)) {
    tensors.set('lm_head.weight', { ...embed, name: 'lm_head.weight' });
    config.tieWordEmbeddings = true;
  } else if (!embed && head) {
    tensors.set('model.embed_tokens.weight', { ...head, name: 'model.embed_tokens.weight' });
    config.tieWordEmbeddings = true;
  }
  if (!tensors.has('model.embed_tokens.weight')) {
    throw new Error(`${spec.source ?? spec.configPath}: checkpoint has neither model.embed_tokens.weight nor lm_head.weight`);
  }
  return {
    source: spec.source ?? dirname(spec.configPath),
    format: 'safetensors',
    config,
    tensors,
    ggufMetadata: null,
  };
}

/** Load a Hugging Face model directory (config.json + model.safetensors or a sharded index). */
export function loadSafetensorsDirectory(dir: string, fastLoad: boolean): Checkpoint {
  const configPath = resolve(dir, 'config.json');
  if (!existsSync(configPath)) throw new Error(`${dir}: no config.json`);
  const index = resolve(dir, 'model.safetensors.index.json');
  const single = resolve(dir, 'model.safetensors');
  let files: string[];
  if (existsSync(index)) files = [index];
  else if (existsSync(single)) files = [single];
  else throw new Error(`${dir}: no model.safetensors or model.safetensors.index.json`);
  const gen = resolve(dir, 'generation_config.json');
  return loadSafetensorsCheckpoint({
    files,
    configPath,
    generationConfigPath: existsSync(gen) ? gen : null,
    source: dir,
    fastLoad,
  });
}

/** Replace any *.index.json with the shard files its weight_map names (in first-seen order). */
function expandShards(files: string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (!f.endsWith('.index.json')) {
      out.push(f);
      continue;
    }
    const index = readJson(f) as { weight_map?: Record<string, string> };
    if (!index.weight_map || typeof index.weight_map !== 'object') throw new Error(`${f}: no weight_map`);
    for (const shard of new Set(Object.values(index.weight_map))) {
      out.push(resolve(dirname(f), basename(shard)));
    }
  }
  return out;
}

/**
 * `__metadata__` entries of the form {"missing.name": "stored.name"} record tensors saved once
 * under another name (transformers' shared-tensor dedup, e.g. tied embeddings).
 */
function applyAliases(tensors: Map<string, Tensor>, metadata: Record<string, string>): void {
  for (const [alias, target] of Object.entries(metadata)) {
    if (typeof target !== 'string' || tensors.has(alias)) continue;
    const t = tensors.get(target);
    if (t) tensors.set(alias, { ...t, name: alias });
  }
}

function readJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`${path}: cannot read (${(err as Error).message})`, { cause: err });
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`${path}: bad JSON (${(err as Error).message})`, { cause: err });
  }
}
