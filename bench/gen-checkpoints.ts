// Writes deterministic random-weight checkpoints of realistic size into a cache directory outside
// the repository (~/.cache/svc-bench/, or $SVC_BENCH_CACHE), skipping ones already there. Each
// artifact has a sidecar <artifact>.gen.json whose key hashes the generator version, the shape,
// the format and the tokenizer; a mismatch regenerates it.
//
//   node dist/bench/gen-checkpoints.js [--only qwen3-q8_0,llama-bf16] [--small] [--cache DIR]
//                                      [--llama-quantize PATH]
//
// Artifacts are <shape>-<format>, shape qwen3 / llama (the default set), qwen3moe (only on
// request: --only qwen3moe-q8_0; bench/moe.ts generates what it needs) or qwen35 (the hybrid
// Qwen3.5 shape, bf16 only: --only qwen35-bf16; bench/hybrid-prefix.ts generates it). Format q8_0 / q4_0 / q4_k_m / q5_k_m / bf16-gguf is one .gguf
// file, bf16 is a Hugging Face directory (config.json, model.safetensors, tokenizer files). The
// K-quant mixes follow llama.cpp's Q4_K_M / Q5_K_M recipe with the built-in quantizers
// (src/kernels/quantize.ts), or come from a llama-quantize binary when one is given.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GGML_TYPE } from '../src/model/loaders/gguf-header.js';
import { f32ToBf16, quantizeRowQ4_0, quantizeRowQ8_0 } from '../src/kernels/dequant.js';
import { quantizeRowQ4K, quantizeRowQ5K, quantizeRowQ6K } from '../src/kernels/quantize.js';
import { readGgufHeader } from '../src/model/loaders/gguf-header.js';
import { GgufStreamWriter, ggufTensorBytes, meta, type GgufMeta } from './gguf-stream-writer.js';
import { SafetensorsStreamWriter } from './safetensors-stream-writer.js';
import {
  DEFAULT_SHAPE_IDS,
  HF_ONLY_SHAPE_IDS,
  hfConfig,
  hfTensorSpecs,
  SHAPE_IDS,
  shapeOf,
  tensorSpecs,
  type ModelShape,
  type TensorSpec,
} from './shapes.js';
import { loadBenchTokenizer, TOKENIZER_FILES, type BenchTokenizer } from './tokenizer-assets.js';
import { hashString, hfRowOfPermuted, RowSource } from './weights.js';

/** Bump when the bytes written for the same shape/format change. */
export const GENERATOR_VERSION = 1;

export const FORMATS = ['q8_0', 'q4_0', 'q4_k_m', 'q5_k_m', 'bf16', 'bf16-gguf'] as const;
export type Format = (typeof FORMATS)[number];
type GgufFormat = Exclude<Format, 'bf16'>;
/** Formats that mix K-quant types per tensor (llama.cpp's _M recipes). */
export const K_MIX_FORMATS: readonly Format[] = ['q4_k_m', 'q5_k_m'];
/** What the generator writes when no --only is given. */
export const DEFAULT_FORMATS: Format[] = ['q8_0', 'q4_0', 'q4_k_m', 'q5_k_m', 'bf16'];

export interface Artifact {
  /** <shape>-<format>, e.g. qwen3-q8_0. */
  id: string;
  shape: ModelShape;
  format: Format;
  /** The .gguf file, or the HF directory for bf16. */
  path: string;
  /** Bytes of tensor data (the file less its header and padding). */
  weightBytes: number;
  /**
   * Weight bytes one decode step reads per token (KV cache aside): every tensor but the experts,
   * top-k of each expert stack, the embedding (tied: the LM head) plus the one row looked up.
   * A dense shape reads all its weights, so this is weightBytes plus one embedding row.
   */
  activeBytes: number;
  /** Whether this call wrote it (false: found in the cache). */
  generated: boolean;
  /** What quantized it: the built-in quantizers, or `llama-quantize (<version>)`. */
  quantizer: string;
}

export interface GenerateOptions {
  small?: boolean;
  cacheDir?: string;
  tokenizerDir?: string;
  /** A llama-quantize binary: K-quant mixes are made with it from the q8_0 file (--allow-requantize). */
  llamaQuantize?: string;
  log?: (line: string) => void;
}

export function defaultCacheDir(): string {
  return resolve(process.env.SVC_BENCH_CACHE ?? join(homedir(), '.cache', 'svc-bench'));
}

export function parseArtifactId(id: string): { shapeId: string; format: Format } {
  for (const format of [...FORMATS].sort((a, b) => b.length - a.length)) {
    if (id.endsWith(`-${format}`)) {
      const shapeId = id.slice(0, -format.length - 1);
      if (!SHAPE_IDS.includes(shapeId)) continue;
      if (format !== 'bf16' && HF_ONLY_SHAPE_IDS.includes(shapeId))
        throw new Error(`checkpoint "${id}": shape ${shapeId} is written as a Hugging Face directory only (${shapeId}-bf16)`);
      return { shapeId, format };
    }
  }
  throw new Error(
    `unknown checkpoint "${id}" (expected <shape>-<format>, shapes: ${SHAPE_IDS.join(', ')}; formats: ${FORMATS.join(', ')})`,
  );
}

/** The type of every matrix in a single-type format; for a K mix, the type of its ordinary matrices. */
const GGML_OF: Record<GgufFormat, number> = {
  q8_0: GGML_TYPE.Q8_0,
  q4_0: GGML_TYPE.Q4_0,
  q4_k_m: GGML_TYPE.Q4_K,
  q5_k_m: GGML_TYPE.Q5_K,
  'bf16-gguf': GGML_TYPE.BF16,
};
/** llama.cpp's general.file_type (LLAMA_FTYPE_MOSTLY_*). */
const FILE_TYPE: Record<GgufFormat, number> = { q8_0: 7, q4_0: 2, q4_k_m: 15, q5_k_m: 17, 'bf16-gguf': 32 };
/** llama-quantize's type argument for each K mix. */
const LLAMA_QUANTIZE_TYPE: Record<string, string> = { q4_k_m: 'Q4_K_M', q5_k_m: 'Q5_K_M' };

/** llama.cpp's use_more_bits (llama-quant.cpp): the first and last eighth of the layers, and every third between. */
export function useMoreBits(layer: number, numLayers: number): boolean {
  const eighth = Math.trunc(numLayers / 8);
  return layer < eighth || layer >= Math.trunc((7 * numLayers) / 8) || (layer - eighth) % 3 === 2;
}

/**
 * GGUF tensor type of a tensor in a format: norms and the MoE router (ffn_gate_inp, which neither
 * llama.cpp's converter nor its quantizer ever quantizes) stay F32. Single-type formats put every
 * other matrix in their type. The K mixes follow llama.cpp's Q4_K_M / Q5_K_M recipe for a
 * tied-embedding model: the embedding doubles as the output and takes the output's Q6_K; attn_v
 * and ffn_down take Q6_K on the use_more_bits layers (ffn_down_exps too: llama-quantize matches
 * "ffn_down" in the name and reads the layer from it); everything else Q4_K (Q5_K). A model of
 * exactly 8 experts gets llama-quantize's Mixtral exceptions: attn_v and attn_k Q8_0, attn_output Q5_K.
 */
export function ggmlTypeOf(spec: TensorSpec, format: GgufFormat, shape: ModelShape): number {
  // Norms, routers and the small Gated DeltaNet tensors (conv kernel, A_log, dt_bias) stay F32.
  if (spec.role !== 'embedding' && spec.role !== 'linear') return GGML_TYPE.F32;
  if (!K_MIX_FORMATS.includes(format)) return GGML_OF[format];
  if (spec.role === 'embedding') return GGML_TYPE.Q6_K;
  const part = /^blk\.\d+\.(\w+)\.weight$/.exec(spec.ggufName)?.[1] ?? '';
  if (shape.moe?.numExperts === 8) {
    if (part === 'attn_v' || part === 'attn_k') return GGML_TYPE.Q8_0;
    if (part === 'attn_output') return GGML_TYPE.Q5_K;
  }
  const moreBitsTensor = part === 'attn_v' || part === 'ffn_down' || part === 'ffn_down_exps';
  return moreBitsTensor && useMoreBits(spec.layer, shape.numLayers) ? GGML_TYPE.Q6_K : GGML_OF[format];
}

/** A tensor as the byte counts see it: its GGUF name, ggml dims (innermost first) and stored bytes. */
export interface SizedTensor {
  name: string;
  dims: number[];
  bytes: number;
}

/** The tensors of an artifact this generator writes, with their stored sizes (BF16 for the HF directory). */
function sizedTensors(shape: ModelShape, format: Format): SizedTensor[] {
  return tensorSpecs(shape).map((spec) => {
    const dims = [...spec.shape].reverse();
    const bytes =
      format === 'bf16'
        ? dims.reduce((a, b) => a * b, 1) * 2
        : ggufTensorBytes({ name: spec.ggufName, dims, ggmlType: ggmlTypeOf(spec, format, shape) });
    return { name: spec.ggufName, dims, bytes };
  });
}

export function weightBytesOf(shape: ModelShape, format: Format): number {
  return sizedTensors(shape, format).reduce((sum, t) => sum + t.bytes, 0);
}

/** What one decode step reads per token, by part (bytes). `active` is their sum. */
export interface ActiveBytes {
  /** The one embedding row looked up for the input token. */
  embeddingRow: number;
  /** The LM head: output.weight, or with tied embeddings the whole embedding matrix. */
  lmHead: number;
  /** Attention projections (q, k, v, o). */
  attention: number;
  /** Gated DeltaNet layers (hybrid shapes): in_proj_qkv / z / b / a, conv kernel, A_log, dt_bias, out_proj. */
  linearAttention: number;
  /** MoE routers (ffn_gate_inp). */
  router: number;
  /** Top-k of every expert stack: bytes × experts used ÷ experts. */
  experts: number;
  /** Dense FFN projections. */
  denseFfn: number;
  norms: number;
  active: number;
  /** Every tensor, for the total / active ratio. */
  total: number;
}

/**
 * Per-token weight reads of a decode step from GGUF tensor names and sizes, so it applies to any
 * GGUF file of these shapes (llama-quantize's too). Routing is assumed spread: a step reads
 * expertsUsed of each stack's experts, which is what random weights (and a trained router, on
 * average) give; KV-cache reads are left out.
 */
export function activeBytesOfTensors(tensors: readonly SizedTensor[], expertsUsed: number): ActiveBytes {
  const b: ActiveBytes = {
    embeddingRow: 0,
    lmHead: 0,
    attention: 0,
    linearAttention: 0,
    router: 0,
    experts: 0,
    denseFfn: 0,
    norms: 0,
    active: 0,
    total: 0,
  };
  const untied = tensors.some((t) => t.name === 'output.weight');
  for (const t of tensors) {
    b.total += t.bytes;
    if (t.name === 'token_embd.weight') {
      b.embeddingRow += t.bytes / t.dims[1];
      if (!untied) b.lmHead += t.bytes;
    } else if (t.name === 'output.weight') b.lmHead += t.bytes;
    else if (t.name.endsWith('_norm.weight')) b.norms += t.bytes;
    else if (t.name.includes('.ffn_gate_inp.')) b.router += t.bytes;
    else if (t.name.includes('_exps.')) b.experts += (t.bytes * expertsUsed) / t.dims[2];
    else if (/\.(ssm_|attn_qkv\.|attn_gate\.)/.test(t.name)) b.linearAttention += t.bytes;
    else if (t.name.includes('.attn_')) b.attention += t.bytes;
    else if (t.name.includes('.ffn_')) b.denseFfn += t.bytes;
    else throw new Error(`activeBytesOfTensors: no category for tensor ${t.name}`);
  }
  b.active = b.embeddingRow + b.lmHead + b.attention + b.linearAttention + b.router + b.experts + b.denseFfn + b.norms;
  return b;
}

/** Per-token weight reads of a shape in a format, as this generator lays it out. */
export function activeBytesOf(shape: ModelShape, format: Format): ActiveBytes {
  return activeBytesOfTensors(sizedTensors(shape, format), shape.moe?.numExpertsPerTok ?? 0);
}

/** Tensors of a GGUF file as its header lists them (files this generator did not lay out). */
function sizedTensorsInFile(path: string): SizedTensor[] {
  return readGgufHeader(path).tensors.map((t) => ({ name: t.name, dims: t.dims, bytes: ggufTensorBytes(t) }));
}

/** Per-token weight reads of an artifact, by part: from the file's own header for a GGUF (llama-quantize's too). */
export function activeBytesOfArtifact(a: Artifact): ActiveBytes {
  if (a.format === 'bf16') return activeBytesOf(a.shape, a.format);
  return activeBytesOfTensors(sizedTensorsInFile(a.path), a.shape.moe?.numExpertsPerTok ?? 0);
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
    case GGML_TYPE.Q4_K:
      return quantizeRowQ4K(row, row.length);
    case GGML_TYPE.Q5_K:
      return quantizeRowQ5K(row, row.length);
    case GGML_TYPE.Q6_K:
      return quantizeRowQ6K(row, row.length);
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

function ggufArchMetadata(shape: ModelShape, format: GgufFormat): Record<string, GgufMeta> {
  const a = shape.family;
  // What convert_hf_to_gguf.py adds for Qwen3-MoE (llama.cpp's qwen3moe always renormalizes top-k).
  const moe: Record<string, GgufMeta> = shape.moe
    ? {
        [`${a}.expert_count`]: meta.u32(shape.moe.numExperts),
        [`${a}.expert_used_count`]: meta.u32(shape.moe.numExpertsPerTok),
        [`${a}.expert_feed_forward_length`]: meta.u32(shape.moe.moeIntermediateSize),
      }
    : {};
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
    ...moe,
  };
}

function writeGgufArtifact(path: string, shape: ModelShape, format: GgufFormat, tok: BenchTokenizer, progress: Progress): void {
  const specs = tensorSpecs(shape);
  const metadata = { ...ggufArchMetadata(shape, format), ...tok.ggufMetadata(shape.vocabSize) };
  const writer = new GgufStreamWriter(
    path,
    metadata,
    specs.map((s) => ({
      name: s.ggufName,
      dims: [...s.shape].reverse(),
      ggmlType: ggmlTypeOf(s, format, shape),
    })),
  );
  const seed = modelSeed(shape);
  // llama.cpp's converter interleaves Q/K rows only for the llama architecture (not qwen3).
  const permute = shape.family === 'llama';
  try {
    for (const spec of specs) {
      emitTensor(spec, seed, ggmlTypeOf(spec, format, shape), permute, (b) => {
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
  // Experts one tensor each (mlp.experts.M.*), as transformers' Qwen3-MoE checkpoints store them.
  const specs = hfTensorSpecs(shape);
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
  /** What quantized the file (absent in sidecars written before the K mixes). */
  quantizer?: string;
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

const BUILT_IN = 'built-in quantizer';

/** The artifact `id` (e.g. qwen3-q8_0), generated unless an up-to-date copy is cached. */
export function ensureCheckpoint(id: string, opts: GenerateOptions = {}): Artifact {
  const { shapeId, format } = parseArtifactId(id);
  if (opts.llamaQuantize && K_MIX_FORMATS.includes(format)) return ensureLlamaQuantized(id, opts.llamaQuantize, opts);
  const shape = shapeOf(shapeId, opts.small ?? false);
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  mkdirSync(cacheDir, { recursive: true });
  const name = `${opts.small ? 'small-' : ''}${id}`;
  const path = join(cacheDir, format === 'bf16' ? name : `${name}.gguf`);
  const tok = loadBenchTokenizer(opts.tokenizerDir);
  const key = cacheKey(shape, format, tok);
  const weightBytes = weightBytesOf(shape, format);
  const activeBytes = activeBytesOf(shape, format).active;
  const artifact = { id, shape, format, path, weightBytes, activeBytes, quantizer: BUILT_IN };
  if (isCached(path, format, key)) return { ...artifact, generated: false };

  const log = opts.log;
  log?.(`generating ${name} (${(weightBytes / 2 ** 30).toFixed(2)} GiB of weights) → ${path}`);
  const t0 = Date.now();
  const progress = new Progress(name, weightBytes, log);
  writeAtomically(path, format, key, BUILT_IN, (partial) => {
    if (format === 'bf16') writeHfArtifact(partial, shape, tok, progress);
    else writeGgufArtifact(partial, shape, format, tok, progress);
  });
  log?.(`  ${name}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { ...artifact, generated: true };
}

/**
 * Written under a temporary name and renamed, so an interrupted run never leaves a plausible
 * file; the sidecar goes last.
 */
function writeAtomically(path: string, format: Format, key: string, quantizer: string, write: (partial: string) => void): void {
  const partial = `${path}.partial`;
  rmSync(partial, { recursive: true, force: true });
  rmSync(`${path}.gen.json`, { force: true });
  write(partial);
  rmSync(path, { recursive: true, force: true });
  renameSync(partial, path);
  const sidecar: Sidecar = { generatorVersion: GENERATOR_VERSION, key, bytes: statSync(dataFileOf(path, format)).size, quantizer };
  writeFileSync(`${path}.gen.json`, `${JSON.stringify(sidecar, null, 2)}\n`);
}

/**
 * A K-quant mix made by llama.cpp's own llama-quantize from this generator's q8_0 file
 * (requantized: --allow-requantize). Cached as <name>.llama-quantize.gguf, keyed on the source
 * file and the binary, so it never stands in for the built-in quantizer's file or vice versa.
 */
function ensureLlamaQuantized(id: string, binary: string, opts: GenerateOptions): Artifact {
  const { shapeId, format } = parseArtifactId(id);
  const source = ensureCheckpoint(`${shapeId}-q8_0`, { ...opts, llamaQuantize: undefined });
  const bin = resolve(binary);
  const binStat = statSync(bin);
  const sourceSidecar = readFileSync(`${source.path}.gen.json`, 'utf8');
  const key = createHash('sha256')
    .update(JSON.stringify({ v: GENERATOR_VERSION, format, source: sourceSidecar, bin, size: binStat.size, mtime: binStat.mtimeMs }))
    .digest('hex');
  const name = `${opts.small ? 'small-' : ''}${id}`;
  const path = join(dirname(source.path), `${name}.llama-quantize.gguf`);
  const artifact = { id, shape: source.shape, format, path };
  // llama-quantize picks its own types, so the sizes come from the file's header.
  const sizes = () => {
    const tensors = sizedTensorsInFile(path);
    return {
      weightBytes: tensors.reduce((sum, t) => sum + t.bytes, 0),
      activeBytes: activeBytesOfTensors(tensors, source.shape.moe?.numExpertsPerTok ?? 0).active,
    };
  };
  if (isCached(path, format, key)) {
    const sidecar = JSON.parse(readFileSync(`${path}.gen.json`, 'utf8')) as Sidecar;
    return { ...artifact, ...sizes(), quantizer: sidecar.quantizer ?? 'llama-quantize', generated: false };
  }
  opts.log?.(`quantizing ${name} with ${bin} from ${source.path}`);
  const t0 = Date.now();
  let quantizer = 'llama-quantize';
  writeAtomically(path, format, key, quantizer, (partial) => {
    const res = spawnSync(bin, ['--allow-requantize', source.path, partial, LLAMA_QUANTIZE_TYPE[format]], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
    });
    const output = `${res.stdout ?? ''}${res.stderr ?? ''}`;
    if (res.error) throw res.error;
    if (res.status !== 0) throw new Error(`${bin} failed (${res.signal ?? `exit ${res.status}`}):\n${output.slice(-4000)}`);
    const commit = /commit ([0-9a-f]{7,})/.exec(output);
    if (commit) quantizer = `llama-quantize (commit ${commit[1]})`;
  });
  if (quantizer !== 'llama-quantize') {
    const sidecar = JSON.parse(readFileSync(`${path}.gen.json`, 'utf8')) as Sidecar;
    writeFileSync(`${path}.gen.json`, `${JSON.stringify({ ...sidecar, quantizer }, null, 2)}\n`);
  }
  opts.log?.(`  ${name}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { ...artifact, ...sizes(), quantizer, generated: true };
}

function parseCli(argv: string[]): { ids: string[]; small: boolean; cacheDir?: string; llamaQuantize?: string } {
  let ids = DEFAULT_SHAPE_IDS.flatMap((s) => DEFAULT_FORMATS.map((f) => `${s}-${f}`));
  let small = false;
  let cacheDir: string | undefined;
  let llamaQuantize: string | undefined;
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
    else if (a.startsWith('--llama-quantize')) llamaQuantize = resolve(value());
    else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: node dist/bench/gen-checkpoints.js [--only qwen3-q8_0,llama-q4_k_m,qwen3moe-q8_0,qwen35-bf16,...] [--small] [--cache DIR] [--llama-quantize PATH]\n',
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const id of ids) parseArtifactId(id);
  return { ids, small, cacheDir, llamaQuantize };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    const { ids, small, cacheDir, llamaQuantize } = parseCli(process.argv.slice(2));
    for (const id of ids) {
      const a = ensureCheckpoint(id, { small, cacheDir, llamaQuantize, log: (l) => process.stderr.write(`${l}\n`) });
      process.stdout.write(`${a.generated ? 'wrote ' : 'cached'} ${a.path}\n`);
    }
  } catch (err) {
    process.stderr.write(`gen-checkpoints: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
