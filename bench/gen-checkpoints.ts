// Writes deterministic random-weight checkpoints of realistic size into a cache directory outside
// the repository (~/.cache/svc-bench/, or $SVC_BENCH_CACHE), skipping ones already there. Each
// artifact has a sidecar <artifact>.gen.json whose key hashes the generator version, the shape,
// the format and the tokenizer; a mismatch regenerates it.
//
//   node dist/bench/gen-checkpoints.js [--only qwen3-q8_0,llama-bf16] [--small] [--cache DIR]
//
// Artifacts are <shape>-<format>: format q8_0 / q4_0 / bf16-gguf is one .gguf file, bf16 is a
// Hugging Face directory (config.json, model.safetensors, tokenizer files).
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GGML_TYPE } from '../src/model/loaders/gguf-header.js';
import { f32ToBf16, quantizeRowQ4_0, quantizeRowQ8_0 } from '../src/kernels/dequant.js';
import { GgufStreamWriter, ggufTensorBytes, meta, type GgufMeta } from './gguf-stream-writer.js';
import { SafetensorsStreamWriter } from './safetensors-stream-writer.js';
import { hfConfig, SHAPE_IDS, shapeOf, tensorSpecs, type ModelShape, type TensorSpec } from './shapes.js';
import { loadBenchTokenizer, TOKENIZER_FILES, type BenchTokenizer } from './tokenizer-assets.js';
import { hashString, hfRowOfPermuted, RowSource } from './weights.js';

/** Bump when the bytes written for the same shape/format change. */
export const GENERATOR_VERSION = 1;

export const FORMATS = ['q8_0', 'q4_0', 'bf16', 'bf16-gguf'] as const;
export type Format = (typeof FORMATS)[number];
/** What the generator writes when no --only is given. */
export const DEFAULT_FORMATS: Format[] = ['q8_0', 'q4_0', 'bf16'];

export interface Artifact {
  /** <shape>-<format>, e.g. qwen3-q8_0. */
  id: string;
  shape: ModelShape;
  format: Format;
  /** The .gguf file, or the HF directory for bf16. */
  path: string;
  /** Bytes of tensor data: with tied embeddings, what one decode step reads (KV cache aside). */
  weightBytes: number;
  /** Whether this call wrote it (false: found in the cache). */
  generated: boolean;
}

export interface GenerateOptions {
  small?: boolean;
  cacheDir?: string;
  tokenizerDir?: string;
  log?: (line: string) => void;
}

export function defaultCacheDir(): string {
  return resolve(process.env.SVC_BENCH_CACHE ?? join(homedir(), '.cache', 'svc-bench'));
}

export function parseArtifactId(id: string): { shapeId: string; format: Format } {
  for (const format of [...FORMATS].sort((a, b) => b.length - a.length)) {
    if (id.endsWith(`-${format}`)) {
      const shapeId = id.slice(0, -format.length - 1);
      if (SHAPE_IDS.includes(shapeId)) return { shapeId, format };
    }
  }
  throw new Error(
    `unknown checkpoint "${id}" (expected <shape>-<format>, shapes: ${SHAPE_IDS.join(', ')}; formats: ${FORMATS.join(', ')})`,
  );
}

const GGML_OF: Record<Exclude<Format, 'bf16'>, number> = { q8_0: GGML_TYPE.Q8_0, q4_0: GGML_TYPE.Q4_0, 'bf16-gguf': GGML_TYPE.BF16 };
/** llama.cpp's general.file_type (LLAMA_FTYPE_MOSTLY_*). */
const FILE_TYPE: Record<Exclude<Format, 'bf16'>, number> = { q8_0: 7, q4_0: 2, 'bf16-gguf': 32 };

/** GGUF tensor type of a tensor in a format: norms stay F32, every matrix takes the format's type. */
function ggmlTypeOf(spec: TensorSpec, format: Exclude<Format, 'bf16'>): number {
  return spec.role === 'norm' ? GGML_TYPE.F32 : GGML_OF[format];
}

export function weightBytesOf(shape: ModelShape, format: Format): number {
  let total = 0;
  for (const spec of tensorSpecs(shape)) {
    const elements = spec.shape.reduce((a, b) => a * b, 1);
    if (format === 'bf16') total += elements * 2;
    else total += ggufTensorBytes({ name: spec.ggufName, dims: [...spec.shape].reverse(), ggmlType: ggmlTypeOf(spec, format) });
  }
  return total;
}

function modelSeed(shape: ModelShape): number {
  return hashString(`svc-bench:${shape.id}`);
}

/** Encodes one f32 row into the bytes a format stores. */
function encodeRow(row: Float32Array, type: number): Uint8Array {
  switch (type) {
    case GGML_TYPE.Q8_0:
      return quantizeRowQ8_0(row, row.length);
    case GGML_TYPE.Q4_0:
      return quantizeRowQ4_0(row, row.length);
    case GGML_TYPE.F32:
      return new Uint8Array(row.buffer.slice(row.byteOffset, row.byteOffset + row.byteLength));
    case GGML_TYPE.BF16: {
      const out = new Uint16Array(row.length);
      for (let i = 0; i < row.length; i++) out[i] = f32ToBf16(row[i]);
      return new Uint8Array(out.buffer);
    }
    default:
      throw new Error(`no row encoder for ggml type ${type}`);
  }
}

/** Streams every row of one tensor, in stored order, to `sink`. */
function emitTensor(spec: TensorSpec, seed: number, type: number, permute: boolean, sink: (b: Uint8Array) => void): void {
  const src = new RowSource(spec, seed);
  const row = new Float32Array(src.cols);
  const heads = permute ? spec.permuteHeads : 0;
  for (let r = 0; r < src.rows; r++) {
    src.fill(heads ? hfRowOfPermuted(r, src.rows, heads) : r, row);
    sink(encodeRow(row, type));
  }
}

function ggufArchMetadata(shape: ModelShape, format: Exclude<Format, 'bf16'>): Record<string, GgufMeta> {
  const a = shape.family;
  return {
    'general.architecture': meta.str(a),
    'general.name': meta.str(shape.name),
    'general.file_type': meta.u32(FILE_TYPE[format]),
    'general.quantization_version': meta.u32(2),
    [`${a}.context_length`]: meta.u32(shape.maxPositionEmbeddings),
    [`${a}.embedding_length`]: meta.u32(shape.hiddenSize),
    [`${a}.block_count`]: meta.u32(shape.numLayers),
    [`${a}.feed_forward_length`]: meta.u32(shape.intermediateSize),
    [`${a}.attention.head_count`]: meta.u32(shape.numHeads),
    [`${a}.attention.head_count_kv`]: meta.u32(shape.numKvHeads),
    [`${a}.attention.key_length`]: meta.u32(shape.headDim),
    [`${a}.attention.value_length`]: meta.u32(shape.headDim),
    [`${a}.rope.dimension_count`]: meta.u32(shape.headDim),
    [`${a}.rope.freq_base`]: meta.f32(shape.ropeTheta),
    [`${a}.attention.layer_norm_rms_epsilon`]: meta.f32(shape.rmsNormEps),
    [`${a}.vocab_size`]: meta.u32(shape.vocabSize),
  };
}

function writeGgufArtifact(
  path: string,
  shape: ModelShape,
  format: Exclude<Format, 'bf16'>,
  tok: BenchTokenizer,
  progress: Progress,
): void {
  const specs = tensorSpecs(shape);
  const metadata = { ...ggufArchMetadata(shape, format), ...tok.ggufMetadata(shape.vocabSize) };
  const writer = new GgufStreamWriter(
    path,
    metadata,
    specs.map((s) => ({
      name: s.ggufName,
      dims: [...s.shape].reverse(),
      ggmlType: ggmlTypeOf(s, format),
    })),
  );
  const seed = modelSeed(shape);
  // llama.cpp's converter interleaves Q/K rows only for the llama architecture (not qwen3).
  const permute = shape.family === 'llama';
  try {
    for (const spec of specs) {
      emitTensor(spec, seed, ggmlTypeOf(spec, format), permute, (b) => {
        writer.write(b);
        progress.add(b.byteLength);
      });
    }
  } catch (err) {
    writer.abort();
    throw err;
  }
  writer.close();
}

function writeHfArtifact(dir: string, shape: ModelShape, tok: BenchTokenizer, progress: Progress): void {
  mkdirSync(dir, { recursive: true });
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  writeFileSync(join(dir, 'config.json'), json(hfConfig(shape, tok.bosId, tok.eosId)));
  writeFileSync(join(dir, 'generation_config.json'), json({ bos_token_id: tok.bosId, eos_token_id: tok.eosId, do_sample: false }));
  for (const f of TOKENIZER_FILES) copyFileSync(join(tok.dir, f), join(dir, f));
  const specs = tensorSpecs(shape);
  const writer = new SafetensorsStreamWriter(
    join(dir, 'model.safetensors'),
    specs.map((s) => ({ name: s.hfName, dtype: 'BF16', shape: s.shape })),
  );
  const seed = modelSeed(shape);
  try {
    for (const spec of specs)
      emitTensor(spec, seed, GGML_TYPE.BF16, false, (b) => {
        writer.write(b);
        progress.add(b.byteLength);
      });
  } catch (err) {
    writer.abort();
    throw err;
  }
  writer.close();
}

/** Logs every ~10% of an artifact's bytes. */
class Progress {
  private done = 0;
  private nextMark = 0.1;
  private readonly start = Date.now();
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly log?: (line: string) => void,
  ) {}
  add(n: number): void {
    this.done += n;
    if (this.log && this.total > 64 << 20 && this.done >= this.nextMark * this.total) {
      this.log(`  ${this.label}: ${Math.round((100 * this.done) / this.total)}% (${((Date.now() - this.start) / 1000).toFixed(0)} s)`);
      this.nextMark += 0.1;
    }
  }
}

interface Sidecar {
  generatorVersion: number;
  key: string;
  bytes: number;
}

/** File whose size the sidecar records: the .gguf, or the directory's model.safetensors. */
function dataFileOf(path: string, format: Format): string {
  return format === 'bf16' ? join(path, 'model.safetensors') : path;
}

function cacheKey(shape: ModelShape, format: Format, tok: BenchTokenizer): string {
  return createHash('sha256')
    .update(JSON.stringify({ v: GENERATOR_VERSION, shape, format, tokenizer: tok.hash }))
    .digest('hex');
}

function isCached(path: string, format: Format, key: string): boolean {
  const sidecarPath = `${path}.gen.json`;
  const dataFile = dataFileOf(path, format);
  if (!existsSync(sidecarPath) || !existsSync(dataFile)) return false;
  try {
    const s = JSON.parse(readFileSync(sidecarPath, 'utf8')) as Sidecar;
    return s.key === key && s.bytes === statSync(dataFile).size;
  } catch {
    return false;
  }
}

/** The artifact `id` (e.g. qwen3-q8_0), generated unless an up-to-date copy is cached. */
export function ensureCheckpoint(id: string, opts: GenerateOptions = {}): Artifact {
  const { shapeId, format } = parseArtifactId(id);
  const shape = shapeOf(shapeId, opts.small ?? false);
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  mkdirSync(cacheDir, { recursive: true });
  const name = `${opts.small ? 'small-' : ''}${id}`;
  const path = join(cacheDir, format === 'bf16' ? name : `${name}.gguf`);
  const tok = loadBenchTokenizer(opts.tokenizerDir);
  const key = cacheKey(shape, format, tok);
  const weightBytes = weightBytesOf(shape, format);
  const artifact = { id, shape, format, path, weightBytes };
  if (isCached(path, format, key)) return { ...artifact, generated: false };

  const log = opts.log;
  log?.(`generating ${name} (${(weightBytes / 2 ** 30).toFixed(2)} GiB of weights) → ${path}`);
  const t0 = Date.now();
  // Written under a temporary name and renamed, so an interrupted run never leaves a plausible file.
  const partial = `${path}.partial`;
  rmSync(partial, { recursive: true, force: true });
  rmSync(`${path}.gen.json`, { force: true });
  const progress = new Progress(name, weightBytes, log);
  if (format === 'bf16') writeHfArtifact(partial, shape, tok, progress);
  else writeGgufArtifact(partial, shape, format, tok, progress);
  rmSync(path, { recursive: true, force: true });
  renameSync(partial, path);
  const sidecar: Sidecar = { generatorVersion: GENERATOR_VERSION, key, bytes: statSync(dataFileOf(path, format)).size };
  writeFileSync(`${path}.gen.json`, `${JSON.stringify(sidecar, null, 2)}\n`);
  log?.(`  ${name}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { ...artifact, generated: true };
}

function parseCli(argv: string[]): { ids: string[]; small: boolean; cacheDir?: string } {
  let ids = SHAPE_IDS.flatMap((s) => DEFAULT_FORMATS.map((f) => `${s}-${f}`));
  let small = false;
  let cacheDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--small') small = true;
    else if (a.startsWith('--only')) ids = value().split(',').filter(Boolean);
    else if (a.startsWith('--cache')) cacheDir = resolve(value());
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/bench/gen-checkpoints.js [--only qwen3-q8_0,llama-q4_0,...] [--small] [--cache DIR]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const id of ids) parseArtifactId(id);
  return { ids, small, cacheDir };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    const { ids, small, cacheDir } = parseCli(process.argv.slice(2));
    for (const id of ids) {
      const a = ensureCheckpoint(id, { small, cacheDir, log: (l) => process.stderr.write(`${l}\n`) });
      process.stdout.write(`${a.generated ? 'wrote ' : 'cached'} ${a.path}\n`);
    }
  } catch (err) {
    process.stderr.write(`gen-checkpoints: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
