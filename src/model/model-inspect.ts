// What the Library shows of a checkpoint without loading it: its architecture, its size on disk
// and whether this build can run it (an architecture with a module here, tensor types the loaders
// read). Reads headers only (GGUF header, config.json, safetensors JSON headers), never weights.
import { existsSync, openSync, readFileSync, readSync, closeSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_DTYPES, WEIGHT_DTYPES } from '../kernels/dtypes.js';
import { architectureForGguf, architectureForHf } from './architectures/index.js';
import { GGML_TYPE, readGgufHeader } from './loaders/gguf-header.js';

export interface ModelInspection {
  /** The checkpoint's own architecture name (GGUF general.architecture, config.json class); null when unreadable. */
  architecture: string | null;
  sizeBytes: number;
  runnable: boolean;
  /** Why it cannot run (or is no model at all); null when runnable. */
  reason: string | null;
  /** The context length it was trained for (max_position_embeddings, GGUF `<arch>.context_length`); null when not stated. */
  contextLength: number | null;
}

const GGML_RUNS = new Set(ALL_DTYPES.map((d) => WEIGHT_DTYPES[d].ggmlType));
const GGML_NAMES = new Map<number, string>(Object.entries(GGML_TYPE).map(([k, v]) => [v, k]));
const SAFETENSORS_RUNS = new Set(ALL_DTYPES.flatMap((d) => WEIGHT_DTYPES[d].safetensors ?? []));

/** Whether `path` looks like a model at all: a .gguf file, or a directory with config.json or a .gguf. */
export function isModelPath(path: string): boolean {
  try {
    const st = statSync(path);
    if (st.isFile()) return path.endsWith('.gguf');
    return existsSync(join(path, 'config.json')) || readdirSync(path).some((f) => f.endsWith('.gguf'));
  } catch {
    return false;
  }
}

/** Inspections by path, kept while the files' sizes and times are unchanged (the Library lists often). */
const inspected = new Map<string, { signature: string; result: ModelInspection }>();
const MAX_INSPECTED = 1024;

/** Inspects `path`, reading headers only when its files changed since the last inspection. */
export function inspectModel(path: string): ModelInspection {
  const signature = fileSignature(path);
  const known = inspected.get(path);
  if (signature !== null && known?.signature === signature) return known.result;
  const result = inspectUncached(path);
  if (signature === null) return result;
  inspected.delete(path);
  if (inspected.size >= MAX_INSPECTED) inspected.delete(inspected.keys().next().value as string);
  inspected.set(path, { signature, result });
  return result;
}

/** Size and modification time of a file, or of every file in a directory; null when unreadable. */
function fileSignature(path: string): string | null {
  try {
    const st = statSync(path);
    if (st.isFile()) return `${st.size}:${st.mtimeMs}`;
    return readdirSync(path)
      .sort()
      .map((f) => {
        const s = statSync(join(path, f));
        return `${f}:${s.size}:${s.mtimeMs}`;
      })
      .join('|');
  } catch {
    return null;
  }
}

function inspectUncached(path: string): ModelInspection {
  try {
    const st = statSync(path);
    if (st.isFile()) return inspectGguf(path, st.size);
    const gguf = readdirSync(path).find((f) => f.endsWith('.gguf'));
    if (!existsSync(join(path, 'config.json')) && gguf) return inspectGguf(join(path, gguf), st.size);
    return inspectHf(path);
  } catch (err) {
    return { architecture: null, sizeBytes: 0, runnable: false, reason: (err as Error).message, contextLength: null };
  }
}

function inspectGguf(file: string, sizeBytes: number): ModelInspection {
  const header = readGgufHeader(file, { skipLargeArrays: true });
  const arch = header.metadata['general.architecture'];
  const architecture = typeof arch === 'string' ? arch : null;
  const context = architecture === null ? undefined : header.metadata[`${architecture}.context_length`];
  const contextLength = typeof context === 'number' && context > 0 ? context : null;
  if (architecture === null || !architectureForGguf(architecture))
    return { architecture, sizeBytes, runnable: false, reason: `unsupported architecture ${architecture ?? '(none)'}`, contextLength };
  const bad = header.tensors.find((t) => !GGML_RUNS.has(t.ggmlType));
  if (bad) {
    const name = GGML_NAMES.get(bad.ggmlType) ?? `ggml type ${bad.ggmlType}`;
    return { architecture, sizeBytes, runnable: false, reason: `unsupported tensor type ${name} (tensor ${bad.name})`, contextLength };
  }
  return { architecture, sizeBytes: statSync(file).size, runnable: true, reason: null, contextLength };
}

function inspectHf(dir: string): ModelInspection {
  const files = readdirSync(dir);
  const sizeBytes = files.reduce((sum, f) => sum + fileSize(join(dir, f)), 0);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
    architectures?: unknown;
    model_type?: unknown;
    max_position_embeddings?: unknown;
    text_config?: { max_position_embeddings?: unknown };
  };
  const context = config.max_position_embeddings ?? config.text_config?.max_position_embeddings;
  const contextLength = typeof context === 'number' && context > 0 ? context : null;
  const classes = Array.isArray(config.architectures) ? config.architectures.filter((a): a is string => typeof a === 'string') : [];
  const modelType = typeof config.model_type === 'string' ? config.model_type : undefined;
  const architecture = classes[0] ?? modelType ?? null;
  if (!architectureForHf(classes, modelType))
    return { architecture, sizeBytes, runnable: false, reason: `unsupported architecture ${architecture ?? '(none)'}`, contextLength };
  for (const f of files.filter((name) => name.endsWith('.safetensors'))) {
    const dtype = safetensorsDtypes(join(dir, f)).find((d) => !SAFETENSORS_RUNS.has(d));
    if (dtype !== undefined)
      return { architecture, sizeBytes, runnable: false, reason: `unsupported tensor type ${dtype} (${f})`, contextLength };
  }
  return { architecture, sizeBytes, runnable: true, reason: null, contextLength };
}

/** The dtypes named in a safetensors file's JSON header. */
function safetensorsDtypes(file: string): string[] {
  const fd = openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const header = Buffer.alloc(Number(len.readBigUInt64LE(0)));
    readSync(fd, header, 0, header.length, 8);
    const entries = JSON.parse(header.toString('utf8')) as Record<string, { dtype?: unknown }>;
    return [
      ...new Set(
        Object.entries(entries)
          .filter(([k]) => k !== '__metadata__')
          .map(([, e]) => String(e.dtype)),
      ),
    ];
  } finally {
    closeSync(fd);
  }
}

function fileSize(path: string): number {
  try {
    const st = statSync(path);
    return st.isFile() ? st.size : 0;
  } catch {
    return 0;
  }
}
