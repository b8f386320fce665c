// KV-cache precision quality report: for every --kv-cache-dtype name the engine can build and every
// model, the KV bytes per token and pool capacity at the server's default memory budget, the
// perplexity of held-out text, and greedy agreement with an f32 KV cache over N generated tokens.
// Everything runs the real model (native kernels) over a paged KV cache built with that dtype's
// per-layer plan (its automatic high-precision layers, as the server does by default), in prefill
// chunks of 64 tokens, so later tokens attend to the quantized K/V of earlier ones.
//
//   npx tsc -p tsconfig.json && node dist/bench/kv-quality.js [--models a,b] [--dtypes x,y] [--tokens N] [--out FILE]
//
// --models: svc-tiny-chat, tinystories-656k, stories260k-wide (default all, from ../shared/models).
// --dtypes: --kv-cache-dtype names (default every name); names whose K or V storage dtype is not
// built yet (not in KV_DTYPES) are skipped and listed. --tokens: generated tokens (default 1000).
// --out: the JSON results (default bench/results/kv-quality.json). Tables go to stdout, progress
// to stderr.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KV_DTYPES, type KvDType } from '../src/kernels/dtypes.js';
import { defaultOps } from '../src/kernels/index.js';
import type { KvLayer } from '../src/kernels/ops.js';
import { allocateKvCache, kvBytesPerToken, type KvLayerDTypes } from '../src/engine/kv-cache.js';
import { highPrecisionLayerCount, KV_CACHE_DTYPE_NAMES, kvLayerPlan, kvPair, type KvCacheDtypeName } from '../src/engine/kv-plan.js';
import { planKvPool } from '../src/engine/memory-budget.js';
import { createModel, type Model } from '../src/model/architectures/index.js';
import { loadCheckpoint } from '../src/model/loaders/index.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';
import type { Checkpoint, ModelConfig } from '../src/model/types.js';
import { argmax, continuationPrompt, negLogProb, perplexityWindows } from './kv-windows.js';
import { withKvCalibration } from '../src/engine/kv-calibration.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS_DIR = resolve(REPO_ROOT, '..', 'shared', 'models');
const DATA_DIR = resolve(REPO_ROOT, 'bench', 'data');

/** The server's defaults (src/cli/flags/limits.ts, src/server/serve.ts). */
const GPU_MEMORY_UTILIZATION = 0.9;
const OOM_GUARD_MB = 4096;
const BLOCK_SIZE = 16;
const MAX_NUM_SEQS = 128;
/** Tokens per forward pass when a prompt or a text is fed (chunked prefill). */
const CHUNK = 64;
/** Perplexity windows: at most this many tokens (within every model's trained length), stride half of it. */
const PPL_WINDOW = 512;
/** A generation longer than the context goes on in a new window whose prompt is BOS + the last context/4 tokens. */
const CONTINUATION_FRACTION = 4;

interface ModelSpec {
  name: string;
  /** Directory or .gguf file, first existing one wins. */
  paths: string[];
  textFile: string;
  /** Prompt of the generation, as text (special tokens written out); BOS is added when the tokenizer adds one. */
  prompt: string;
  /** Perplexity counts every token of the text, or only the assistant turns of a chat. */
  score: 'all' | 'assistant';
}

const MODEL_SPECS: ModelSpec[] = [
  {
    name: 'svc-tiny-chat',
    paths: [join(MODELS_DIR, 'svc-tiny-chat')],
    textFile: 'kv-quality-chat.txt',
    score: 'assistant',
    prompt:
      '<|im_start|>user\nWhat is the weather like in Lisbon today, and what is the capital of Canada?<|im_end|>\n<|im_start|>assistant\n',
  },
  {
    name: 'tinystories-656k',
    paths: [join(MODELS_DIR, 'tinystories-656k')],
    textFile: 'kv-quality-stories.txt',
    score: 'all',
    prompt: 'Once upon a time',
  },
  {
    // The f32 file computes exactly stories260K; the f16 one is the fallback.
    name: 'stories260k-wide',
    paths: [join(MODELS_DIR, 'quant-zoo', 'stories260k-wide-f32.gguf'), join(MODELS_DIR, 'quant-zoo', 'stories260k-wide-f16.gguf')],
    textFile: 'kv-quality-stories.txt',
    score: 'all',
    prompt: 'Once upon a time',
  },
];

interface Args {
  models: ModelSpec[];
  dtypes: KvCacheDtypeName[];
  tokens: number;
  out: string;
  /** > 0: one more row, fp8 with --fp8-kv-calibration-tokens this many (0: none). */
  fp8Calibration: number;
}

function parseArgs(argv: string[]): Args {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i];
    if (!['--models', '--dtypes', '--tokens', '--out', '--fp8-calibration'].includes(f) || i + 1 >= argv.length) {
      throw new Error(
        `usage: node dist/bench/kv-quality.js [--models a,b] [--dtypes x,y] [--tokens N] [--out FILE] [--fp8-calibration N] (at ${f})`,
      );
    }
    flags.set(f, argv[++i]);
  }
  const list = <T extends string>(raw: string | undefined, all: readonly T[], what: string): T[] => {
    if (raw === undefined) return [...all];
    return raw.split(',').map((x) => {
      if (!all.includes(x as T)) throw new Error(`unknown ${what} ${x} (one of ${all.join(', ')})`);
      return x as T;
    });
  };
  const names = list(
    flags.get('--models'),
    MODEL_SPECS.map((m) => m.name),
    'model',
  );
  const tokens = Number(flags.get('--tokens') ?? 1000);
  if (!Number.isInteger(tokens) || tokens < 1) throw new Error(`--tokens must be a positive integer`);
  const fp8Calibration = Number(flags.get('--fp8-calibration') ?? 0);
  if (!Number.isInteger(fp8Calibration) || fp8Calibration < 0) throw new Error(`--fp8-calibration must be an integer ≥ 0`);
  return {
    models: MODEL_SPECS.filter((m) => names.includes(m.name)),
    dtypes: list(flags.get('--dtypes'), KV_CACHE_DTYPE_NAMES, 'dtype'),
    tokens,
    out: resolve(flags.get('--out') ?? join(REPO_ROOT, 'bench', 'results', 'kv-quality.json')),
    fp8Calibration,
  };
}

// ---- running the model over a single-sequence paged KV cache ----

/** One sequence over a KV cache of `capacity` tokens, its blocks in order (slot = position). */
class Sequence {
  private readonly kv: KvLayer[];
  private readonly blockTable: Int32Array;

  constructor(
    private readonly model: Model,
    plan: readonly KvLayerDTypes[],
    capacity: number,
  ) {
    const blocks = Math.ceil(capacity / BLOCK_SIZE);
    this.kv = allocateKvCache(model.config, blocks, BLOCK_SIZE, plan);
    this.blockTable = Int32Array.from({ length: blocks }, (_, i) => i);
  }

  /** Runs tokens at positions start…; logits [rows.length, vocab] for the given rows of the pass. */
  forward(tokens: ArrayLike<number>, start: number, rows: number[]): Float32Array {
    const n = tokens.length;
    const positions = Int32Array.from({ length: n }, (_, i) => start + i);
    const kvLen = start + n;
    return this.model.forward(
      {
        tokens: Int32Array.from(tokens),
        positions,
        slots: positions,
        seqs: [{ qStart: 0, qLen: n, kvLen, blockTable: this.blockTable.subarray(0, Math.ceil(kvLen / BLOCK_SIZE)) }],
        logitRows: Int32Array.from(rows),
      },
      this.kv,
    );
  }

  /**
   * Feeds tokens[0…) from position 0 in chunks, calling visit(position, logits, offset) for each
   * position p that `wants` with the logits that predict token p + 1.
   */
  prefill(
    tokens: readonly number[],
    wants: (pos: number) => boolean,
    visit: (pos: number, logits: Float32Array, offset: number) => void,
  ): void {
    const vocab = this.model.config.vocabSize;
    for (let s = 0; s < tokens.length; s += CHUNK) {
      const e = Math.min(s + CHUNK, tokens.length);
      const rows: number[] = [];
      for (let p = s; p < e; p++) if (wants(p)) rows.push(p - s);
      // The lm_head runs on at least one row (a chunk that needs none asks for its last).
      const logits = this.forward(tokens.slice(s, e), s, rows.length > 0 ? rows : [e - s - 1]);
      if (rows.length > 0) rows.forEach((r, i) => visit(s + r, logits, i * vocab));
    }
  }
}

/**
 * Perplexity of the scored tokens of `tokens` (scored[t]: token t counts; never the first), over
 * strided windows.
 */
function perplexity(model: Model, plan: readonly KvLayerDTypes[], tokens: number[], scored: Uint8Array): number {
  const vocab = model.config.vocabSize;
  const window = Math.min(PPL_WINDOW, model.config.maxPositionEmbeddings);
  const seq = new Sequence(model, plan, window);
  let nll = 0;
  let count = 0;
  for (const w of perplexityWindows(tokens.length, window, Math.floor(window / 2))) {
    const slice = tokens.slice(w.start, w.end);
    // Row p predicts slice[p + 1], token w.start + p + 1: targets in [firstTarget, end) that are scored.
    const wants = (p: number) => w.start + p + 1 >= w.firstTarget && p + 1 < slice.length && scored[w.start + p + 1] === 1;
    seq.prefill(slice, wants, (p, logits, off) => {
      nll += negLogProb(logits, off, vocab, slice[p + 1]);
      count++;
    });
  }
  return Math.exp(nll / count);
}

/**
 * Which tokens perplexity counts: every one (a story), or only the assistant turns' (a chat: the
 * body after `<|im_start|>assistant\n` through its `<|im_end|>`, what a chat model is trained on).
 */
function scoredTokens(tokens: number[], tk: Tokenizer, score: ModelSpec['score']): Uint8Array {
  const mask = new Uint8Array(tokens.length);
  if (score === 'all') {
    mask.fill(1, 1);
    return mask;
  }
  const header = tk.encode('<|im_start|>assistant\n');
  const end = tk.tokenToId('<|im_end|>');
  for (let i = 0; i + header.length <= tokens.length; i++) {
    if (!header.every((id, j) => tokens[i + j] === id)) continue;
    let t = i + header.length;
    for (; t < tokens.length && tokens[t] !== end; t++) mask[t] = 1;
    if (t < tokens.length) mask[t] = 1;
    i = t;
  }
  return mask;
}

/** One generation window: its prompt and the tokens generated after it. */
interface GenWindow {
  prompt: number[];
  generated: number[];
}

/**
 * Greedy generation of `total` tokens, no stop at EOS, in windows of the model's context. With a
 * reference, stops at the first token that differs from it and returns that index (else -1).
 */
function generate(
  model: Model,
  plan: readonly KvLayerDTypes[],
  prompt: number[],
  total: number,
  bos: number | null,
  reference?: readonly number[],
): { windows: GenWindow[]; divergence: number } {
  const ctx = model.config.maxPositionEmbeddings;
  const vocab = model.config.vocabSize;
  if (prompt.length >= ctx) throw new Error(`the prompt (${prompt.length} tokens) fills the ${ctx}-token context`);
  const seq = new Sequence(model, plan, Math.min(ctx, prompt.length + total));
  const windows: GenWindow[] = [];
  const all: number[] = [...prompt];
  let made = 0;
  let windowPrompt = prompt;
  while (made < total) {
    const w: GenWindow = { prompt: windowPrompt, generated: [] };
    windows.push(w);
    let next = -1;
    const last = windowPrompt.length - 1;
    seq.prefill(
      windowPrompt,
      (p) => p === last,
      (_p, logits, off) => (next = argmax(logits, off, vocab)),
    );
    for (;;) {
      if (reference && reference[made] !== next) return { windows, divergence: made };
      w.generated.push(next);
      all.push(next);
      made++;
      const pos = windowPrompt.length + w.generated.length - 1;
      if (made >= total || pos + 1 >= ctx) break;
      next = argmax(seq.forward([next], pos, [0]), 0, vocab);
    }
    windowPrompt = continuationPrompt(all, Math.floor(ctx / CONTINUATION_FRACTION), bos);
  }
  return { windows, divergence: -1 };
}

/** Teacher-forced top-1 agreement: feeds each reference window and counts argmax == the reference token. */
function agreement(model: Model, plan: readonly KvLayerDTypes[], windows: GenWindow[]): number {
  const vocab = model.config.vocabSize;
  const longest = Math.max(...windows.map((w) => w.prompt.length + w.generated.length));
  const seq = new Sequence(model, plan, longest);
  let agree = 0;
  for (const { prompt, generated } of windows) {
    // The last generated token is never fed: nothing in this window follows it.
    const fed = [...prompt, ...generated.slice(0, -1)];
    seq.prefill(
      fed,
      (p) => p >= prompt.length - 1,
      (p, logits, off) => {
        if (argmax(logits, off, vocab) === generated[p - prompt.length + 1]) agree++;
      },
    );
  }
  return agree;
}

// ---- the report ----

interface Row {
  dtype: string;
  k: KvDType;
  v: KvDType;
  highPrecisionLayers: number;
  promotedLayers: number;
  bytesPerToken: number;
  poolTokens: number;
  serverPoolTokens: number;
  perplexity: number;
  deltaPplVsBf16: number | null;
  firstDivergence: number | null;
  top1Agreement: number;
  seconds: number;
}

interface ModelReport {
  model: string;
  path: string;
  config: Pick<ModelConfig, 'architecture' | 'numLayers' | 'numHeads' | 'numKvHeads' | 'headDim' | 'vocabSize' | 'maxPositionEmbeddings'>;
  weightBytes: number;
  textTokens: number;
  scoredTokens: number;
  scoredWhat: string;
  pplWindow: number;
  promptTokens: number;
  generatedTokens: number;
  generationWindows: number;
  referenceText: string;
  rows: Row[];
  skipped: { dtype: string; reason: string }[];
  failed: { dtype: string; reason: string }[];
}

/** Tied embeddings expose one buffer under two names: count each buffer once (as the engine worker does). */
function weightBytesOf(checkpoint: Checkpoint): number {
  if (checkpoint.residency) return checkpoint.residency.totalBytes;
  const buffers = new Set<Uint8Array>();
  for (const t of checkpoint.tensors.values()) buffers.add(t.data);
  let bytes = 0;
  for (const b of buffers) bytes += b.byteLength;
  return bytes;
}

function poolTokens(config: ModelConfig, weightBytes: number, bytesPerToken: number, maxNumSeqs: number): number {
  return planKvPool({
    memoryBytes: totalmem(),
    gpuMemoryUtilization: GPU_MEMORY_UTILIZATION,
    weightBytes,
    oomGuardMb: OOM_GUARD_MB,
    kvBytesPerToken: bytesPerToken,
    blockSize: BLOCK_SIZE,
    maxSeqLen: config.maxPositionEmbeddings,
    maxNumSeqs,
  }).poolTokens;
}

function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

function reportModel(spec: ModelSpec, args: Args): ModelReport {
  const path = spec.paths.find((p) => existsSync(p));
  if (!path) throw new Error(`${spec.name}: none of ${spec.paths.join(', ')} exists`);
  const t0 = performance.now();
  const checkpoint = loadCheckpoint(path, { fastLoad: true });
  const weightBytes = weightBytesOf(checkpoint);
  const tk: Tokenizer = loadTokenizer(path);
  const model = createModel(checkpoint, defaultOps());
  const config = model.config;
  const L = config.numLayers;
  const bos = tk.addBosToken ? config.bosTokenId : null;
  const text = tk.encode(readFileSync(join(DATA_DIR, spec.textFile), 'utf8'), { addSpecialTokens: true });
  const scored = scoredTokens(text, tk, spec.score);
  const prompt = tk.encode(spec.prompt, { addSpecialTokens: true });
  log(`${spec.name}: loaded ${relative(REPO_ROOT, path)} in ${((performance.now() - t0) / 1000).toFixed(1)} s; text ${text.length} tokens`);

  const f32Plan: KvLayerDTypes[] = Array.from({ length: L }, () => ({ k: 'f32', v: 'f32' }));
  let t = performance.now();
  const ref = generate(model, f32Plan, prompt, args.tokens, bos);
  const reference = ref.windows.flatMap((w) => w.generated);
  log(
    `${spec.name}: f32 reference, ${reference.length} tokens in ${ref.windows.length} window(s), ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );

  const candidates: { dtype: string; pair: KvLayerDTypes; plan: KvLayerDTypes[]; hp: number; calibrated?: boolean }[] = [
    { dtype: 'f32 (reference)', pair: { k: 'f32', v: 'f32' }, plan: f32Plan, hp: 0 },
  ];
  const skipped: ModelReport['skipped'] = [];
  for (const name of args.dtypes) {
    const pair = kvPair(name);
    const missing = [...new Set([pair.k, pair.v])].filter((d) => !Object.hasOwn(KV_DTYPES, d));
    if (missing.length > 0) {
      skipped.push({ dtype: name, reason: `${missing.join(', ')} not in KV_DTYPES yet` });
      continue;
    }
    candidates.push({ dtype: name, pair, plan: kvLayerPlan(name, L, 0), hp: highPrecisionLayerCount(name, L, 0) });
    if (name === 'fp8' && args.fp8Calibration > 0)
      candidates.push({ dtype: `fp8, calibrated ${args.fp8Calibration}`, pair, plan: kvLayerPlan(name, L, 0), hp: 0, calibrated: true });
  }
  // The engine calibrates through its ops (withKvCalibration), per KV cache: a model built on them.
  let calibratedModel: Model | null = null;
  const modelFor = (calibrated: boolean | undefined): Model =>
    calibrated ? (calibratedModel ??= createModel(checkpoint, withKvCalibration(defaultOps(), args.fp8Calibration))) : model;

  const rows: Row[] = [];
  const failed: ModelReport['failed'] = [];
  for (const { dtype, pair, plan, hp, calibrated } of candidates) {
    t = performance.now();
    const run = modelFor(calibrated);
    // Promoted layers: those whose dtypes are not the name's pair (bf16 keys and values).
    const promoted = plan.filter((p) => p.k !== pair.k || p.v !== pair.v).length;
    const bytesPerToken = kvBytesPerToken(config, plan);
    // Each helper allocates its own cache and drops it when it returns.
    let ppl: number, agree: number;
    let free = { divergence: -1 };
    try {
      ppl = perplexity(run, plan, text, scored);
      if (!dtype.startsWith('f32')) free = generate(run, plan, prompt, args.tokens, bos, reference);
      agree = agreement(run, plan, ref.windows);
    } catch (err) {
      // A dtype this model's shape cannot use (or a kernel that refuses it): reported, not fatal.
      const reason = err instanceof Error ? err.message : String(err);
      failed.push({ dtype, reason });
      log(`${spec.name}: ${dtype} failed: ${reason}`);
      continue;
    }
    rows.push({
      dtype,
      k: pair.k,
      v: pair.v,
      highPrecisionLayers: hp,
      promotedLayers: promoted,
      bytesPerToken,
      poolTokens: poolTokens(config, weightBytes, bytesPerToken, Infinity),
      serverPoolTokens: poolTokens(config, weightBytes, bytesPerToken, MAX_NUM_SEQS),
      perplexity: ppl,
      deltaPplVsBf16: null,
      firstDivergence: dtype.startsWith('f32') ? null : free.divergence,
      top1Agreement: agree,
      seconds: (performance.now() - t) / 1000,
    });
    log(
      `${spec.name}: ${dtype.padEnd(16)} ppl ${ppl.toFixed(4)}, agreement ${agree}/${reference.length}, ${rows.at(-1)!.seconds.toFixed(1)} s`,
    );
  }
  const bf16 = rows.find((r) => r.dtype === 'bf16');
  for (const r of rows) r.deltaPplVsBf16 = bf16 ? r.perplexity - bf16.perplexity : null;

  return {
    model: spec.name,
    path: relative(REPO_ROOT, path),
    config: {
      architecture: config.architecture,
      numLayers: L,
      numHeads: config.numHeads,
      numKvHeads: config.numKvHeads,
      headDim: config.headDim,
      vocabSize: config.vocabSize,
      maxPositionEmbeddings: config.maxPositionEmbeddings,
    },
    weightBytes,
    textTokens: text.length,
    scoredTokens: scored.reduce((a, b) => a + b, 0),
    scoredWhat: spec.score === 'all' ? 'every token' : "the assistant turns' tokens",
    pplWindow: Math.min(PPL_WINDOW, config.maxPositionEmbeddings),
    promptTokens: prompt.length,
    generatedTokens: reference.length,
    generationWindows: ref.windows.length,
    referenceText: tk.decode(reference),
    rows,
    skipped,
    failed,
  };
}

// ---- output ----

function markdownTable(header: string[], rows: string[][], right: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (right[i] ? `${'-'.repeat(w + 1)}:` : `-${'-'.repeat(w + 1)}`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

function formatBytes(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

function renderModel(r: ModelReport): string {
  const n = r.generatedTokens;
  const header = [
    'dtype',
    'K/V',
    'promoted layers',
    'bytes/token',
    'pool tokens',
    'perplexity',
    'Δppl vs bf16',
    'first divergence',
    'top-1 agreement',
  ];
  const rows = r.rows.map((row) => [
    row.dtype,
    `${row.k}/${row.v}`,
    `${row.promotedLayers}/${r.config.numLayers}`,
    formatBytes(row.bytesPerToken),
    row.poolTokens.toLocaleString('en-US'),
    row.perplexity.toFixed(4),
    row.deltaPplVsBf16 === null ? 'n/a' : `${row.deltaPplVsBf16 >= 0 ? '+' : ''}${row.deltaPplVsBf16.toFixed(4)}`,
    row.firstDivergence === null ? '—' : row.firstDivergence < 0 ? `none in ${n}` : String(row.firstDivergence),
    `${row.top1Agreement}/${n} (${((100 * row.top1Agreement) / n).toFixed(1)}%)`,
  ]);
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  const lines = [
    `### ${r.model}`,
    '',
    `\`${r.path}\`: ${r.config.architecture}, ${r.config.numLayers} layers, ${r.config.numKvHeads} KV heads × ${r.config.headDim}, ` +
      `context ${r.config.maxPositionEmbeddings}, weights ${(r.weightBytes / 2 ** 20).toFixed(1)} MiB. ` +
      `Perplexity over ${r.scoredTokens} tokens (${r.scoredWhat} of the held-out text; windows of ${r.pplWindow}, stride ${Math.floor(r.pplWindow / 2)}); ` +
      `agreement over ${n} greedy tokens after a ${r.promptTokens}-token prompt (${r.generationWindows} window${r.generationWindows > 1 ? 's' : ''}). ` +
      `Pool: ${GPU_MEMORY_UTILIZATION} × ${gib(totalmem())} − weights − ${OOM_GUARD_MB} MiB, blocks of ${BLOCK_SIZE}.`,
    '',
    markdownTable(header, rows, [false, false, true, true, true, true, true, true, true]),
  ];
  if (r.skipped.length > 0) {
    lines.push('', `Skipped (a K or V storage dtype not in KV_DTYPES yet): ${r.skipped.map((s) => s.dtype).join(', ')}.`);
  }
  for (const f of r.failed) lines.push('', `Failed: ${f.dtype}: ${f.reason}`);
  return lines.join('\n');
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const reports = args.models.map((m) => reportModel(m, args));
  const seconds = (performance.now() - t0) / 1000;
  console.log(reports.map(renderModel).join('\n\n'));
  mkdirSync(dirname(args.out), { recursive: true });
  const result = {
    command: `node dist/bench/kv-quality.js ${process.argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: { cpu: cpus()[0]?.model ?? 'unknown', logicalCores: availableParallelism(), totalMemBytes: totalmem() },
    settings: {
      generatedTokens: args.tokens,
      prefillChunk: CHUNK,
      pplWindowMax: PPL_WINDOW,
      gpuMemoryUtilization: GPU_MEMORY_UTILIZATION,
      oomGuardMb: OOM_GUARD_MB,
      blockSize: BLOCK_SIZE,
      serverPoolMaxNumSeqs: MAX_NUM_SEQS,
    },
    seconds,
    models: reports,
  };
  writeFileSync(args.out, `${JSON.stringify(result, null, 2)}\n`);
  log(`done in ${seconds.toFixed(0)} s; wrote ${relative(process.cwd(), args.out)}`);
}

main();
