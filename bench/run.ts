// `npm run bench`: svc against llama.cpp on the same random-weight checkpoints, same thread count.
//
//   node dist/bench/run.js [--models qwen3,llama] [--formats q8_0,q4_0,q4_k_m,q5_k_m,bf16]
//                          [--quick | --small] [--engines svc,llamacpp] [--threads N] [--reps N]
//                          [--prompt N] [--decode N] [--concurrency 1,4,8] [--cache DIR] [--out FILE]
//                          [--svc-args "--flag value ..."] [--svc-body JSON] [--llama-server PATH] [--llama-quantize PATH]
//   node dist/bench/run.js --sweep 512,4096,16384,32768 [...]   (the context sweep: bench/context-sweep.ts)
//
// Per checkpoint: svc runs as a `svc serve` child process and is stopped before llama.cpp loads,
// so the two never share the machine. llama.cpp is a native `llama-server` child process when
// --llama-server (or $SVC_BENCH_LLAMA_SERVER) names one, else node-llama-cpp in-process. Prints one table per checkpoint, writes the JSON summary
// to bench/results/latest.json (--small: bench/results/small.json).
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { measureReadBandwidth, type Bandwidth } from './bandwidth.js';
import { runContextSweep } from './context-sweep.js';
import { ensureCheckpoint } from './gen-checkpoints.js';
import {
  executable,
  list,
  log,
  machineInfo,
  openLlamaEngine,
  parseFlags,
  positiveInt,
  REPO_ROOT,
  runEngines,
  threadCount,
} from './harness.js';
import type { LlamaCppInfo } from './llamacpp.js';
import type { BenchEngine, BenchSettings } from './measure.js';
import { formatRun, type CheckpointRun } from './report.js';
import { DEFAULT_SHAPE_IDS, SHAPE_IDS } from './shapes.js';
import { openSvc } from './svc.js';
const BENCH_FORMATS = ['q8_0', 'q4_0', 'q4_k_m', 'q5_k_m', 'bf16'] as const;
const DEFAULT_BENCH_FORMATS = 'q8_0,q4_0,q4_k_m,q5_k_m';
type BenchFormat = (typeof BENCH_FORMATS)[number];
const ENGINES = ['svc', 'llamacpp'] as const;

interface RunOptions {
  models: string[];
  formats: BenchFormat[];
  engines: string[];
  small: boolean;
  quick: boolean;
  threads: number;
  settings: BenchSettings;
  cacheDir?: string;
  out: string;
  svcArgs: string[];
  /** Fields merged into every svc request (a response_format, say), as JSON. */
  svcBody: Record<string, unknown>;
  /** A native llama-server binary; null: node-llama-cpp in-process. */
  llamaServer: string | null;
  /** A llama-quantize binary for the K-quant mixes; null: the built-in quantizers. */
  llamaQuantize: string | null;
}

function parseCli(argv: string[]): RunOptions {
  const known = [
    '--models',
    '--formats',
    '--engines',
    '--threads',
    '--reps',
    '--prompt',
    '--decode',
    '--concurrency',
    '--cache',
    '--out',
    '--svc-args',
    '--svc-body',
    '--llama-server',
    '--llama-quantize',
  ];
  const { flags, switches } = parseFlags(argv, known, ['--quick', '--small'], USAGE);

  const small = switches.has('--small');
  const quick = switches.has('--quick');
  // Full: the shapes. Quick: a rough look in a minute or two. Small: tiny checkpoints, a harness check.
  const base: BenchSettings = small
    ? { promptTokens: 32, decodeTokens: 8, shortPromptTokens: 8, concurrency: [1, 4, 8], reps: 1 }
    : quick
      ? { promptTokens: 128, decodeTokens: 32, shortPromptTokens: 16, concurrency: [1, 4, 8], reps: 1 }
      : { promptTokens: 512, decodeTokens: 128, shortPromptTokens: 16, concurrency: [1, 4, 8], reps: 3 };
  const get = (f: string) => flags.get(f);
  const settings: BenchSettings = {
    promptTokens: get('--prompt') ? positiveInt(get('--prompt')!, '--prompt') : base.promptTokens,
    decodeTokens: get('--decode') ? positiveInt(get('--decode')!, '--decode') : base.decodeTokens,
    shortPromptTokens: base.shortPromptTokens,
    concurrency: get('--concurrency')
      ? get('--concurrency')!
          .split(',')
          .map((x) => positiveInt(x, '--concurrency'))
      : base.concurrency,
    reps: get('--reps') ? positiveInt(get('--reps')!, '--reps') : base.reps,
  };
  if (settings.decodeTokens < 2) throw new Error('--decode must be at least 2 (decode rate is measured between token 1 and N)');
  return {
    models: list(get('--models') ?? DEFAULT_SHAPE_IDS.join(','), SHAPE_IDS, 'model'),
    formats: list(get('--formats') ?? DEFAULT_BENCH_FORMATS, BENCH_FORMATS, 'format'),
    engines: list(get('--engines') ?? ENGINES.join(','), ENGINES, 'engine'),
    small,
    quick,
    threads: threadCount(get('--threads')),
    settings,
    cacheDir: get('--cache') ? resolve(get('--cache')!) : undefined,
    out: resolve(get('--out') ?? resolve(REPO_ROOT, 'bench', 'results', small ? 'small.json' : 'latest.json')),
    svcArgs: (get('--svc-args') ?? '').split(/\s+/).filter(Boolean),
    svcBody: JSON.parse(get('--svc-body') ?? '{}') as Record<string, unknown>,
    llamaServer: executable(get('--llama-server') ?? process.env.SVC_BENCH_LLAMA_SERVER, '--llama-server'),
    llamaQuantize: executable(get('--llama-quantize'), '--llama-quantize'),
  };
}

const USAGE = [
  'usage: node dist/bench/run.js [--models qwen3,llama] [--formats q8_0,q4_0,q4_k_m,q5_k_m,bf16] [--quick | --small]',
  '                              [--engines svc,llamacpp] [--threads N] [--reps N] [--prompt N] [--decode N]',
  '                              [--concurrency 1,4,8] [--cache DIR] [--out FILE] [--svc-args "..."] [--svc-body JSON]',
  '                              [--llama-server PATH (or $SVC_BENCH_LLAMA_SERVER)] [--llama-quantize PATH]',
  '       node dist/bench/run.js --sweep 512,4096,16384,32768 [...]   (context sweep: node dist/bench/context-sweep.js --help)',
].join('\n');

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  // `npm run bench -- --sweep 512,4096,…`: the context sweep (bench/context-sweep.ts) instead.
  if (argv.some((a) => a === '--sweep' || a.startsWith('--sweep='))) return runContextSweep(argv);
  const opts = parseCli(argv);
  const s = opts.settings;
  log(
    `svc-bench: ${opts.threads} threads; prompt ${s.promptTokens}, decode ${s.decodeTokens}, concurrency ${s.concurrency.join('/')}, ${s.reps} rep(s)${opts.small ? ' (small checkpoints)' : ''}`,
  );

  // Bandwidth first, while nothing else of ours is loaded.
  const bandwidth: Bandwidth = await measureReadBandwidth(opts.threads, opts.small ? 256 << 20 : 1 << 30);
  log(`memory read bandwidth: ${bandwidth.gbPerS.toFixed(1)} GB/s (${bandwidth.method})`);

  const contextTokens = Math.max(s.promptTokens, s.shortPromptTokens) + s.decodeTokens + 16;
  const maxConcurrency = Math.max(...s.concurrency);
  const runs: CheckpointRun[] = [];
  let llamaInfo: LlamaCppInfo | null = null;
  const tables: string[] = [];
  for (const model of opts.models) {
    for (const format of opts.formats) {
      const gen = { small: opts.small, cacheDir: opts.cacheDir, llamaQuantize: opts.llamaQuantize ?? undefined, log };
      // svc reads BF16 as an HF safetensors directory; llama.cpp needs it as GGUF.
      const svcArtifact = ensureCheckpoint(`${model}-${format}`, gen);
      const llamaArtifact = format === 'bf16' ? ensureCheckpoint(`${model}-bf16-gguf`, gen) : svcArtifact;
      log(`${model} ${format}:`);
      const opens: (() => Promise<BenchEngine>)[] = [];
      if (opts.engines.includes('svc'))
        opens.push(() =>
          openSvc(svcArtifact.path, {
            repoRoot: REPO_ROOT,
            threads: opts.threads,
            maxSeqLen: contextTokens,
            maxBatchSize: maxConcurrency,
            extraArgs: opts.svcArgs,
            extraBody: opts.svcBody,
            startupTimeoutMs: 10 * 60_000,
            log,
          }),
        );
      if (opts.engines.includes('llamacpp'))
        opens.push(async () => {
          const engine = await openLlamaEngine(llamaArtifact.path, {
            llamaServer: opts.llamaServer,
            threads: opts.threads,
            contextTokens,
            parallel: maxConcurrency,
            batchTokens: s.promptTokens,
          });
          llamaInfo = engine.info;
          return engine;
        });
      // Both engines up, measured alternately (harness.ts runEngines); the bandwidth probe on either
      // side of them, since this machine's bandwidth drifts over minutes.
      const bwBefore = await measureReadBandwidth(opts.threads, opts.small ? 256 << 20 : 1 << 30);
      const outcomes = await runEngines(opens, s);
      const bwAfter = await measureReadBandwidth(opts.threads, opts.small ? 256 << 20 : 1 << 30);
      const bandwidthGbS = (bwBefore.gbPerS + bwAfter.gbPerS) / 2;
      log(`    read bandwidth ${bwBefore.gbPerS.toFixed(1)} GB/s before, ${bwAfter.gbPerS.toFixed(1)} GB/s after`);
      const svc = opts.engines.includes('svc') ? outcomes.shift()! : null;
      const llamacpp = opts.engines.includes('llamacpp') ? outcomes.shift()! : null;
      const run: CheckpointRun = {
        model,
        format,
        svcCheckpoint: svcArtifact.path,
        llamaCheckpoint: llamaArtifact.path,
        // What a decode step reads: for a MoE shape only its top-k experts.
        weightBytes: svcArtifact.activeBytes,
        fileBytes: statSync(svcArtifact.path).isDirectory() ? svcArtifact.weightBytes : statSync(svcArtifact.path).size,
        quantizer: svcArtifact.quantizer,
        llamaCppBuild: (llamaInfo as LlamaCppInfo | null)?.release ?? null,
        bandwidthGbS,
        rooflineTokS: (bandwidthGbS * 1e9) / svcArtifact.activeBytes,
        svc,
        llamacpp,
      };
      runs.push(run);
      const table = formatRun(run, s);
      tables.push(table);
      process.stdout.write(`\n${table}\n`);
    }
  }

  const summary = {
    generatedAt: new Date().toISOString(),
    mode: opts.small ? 'small' : opts.quick ? 'quick' : 'full',
    settings: { ...s, threads: opts.threads },
    machine: machineInfo(),
    bandwidth,
    llamaCpp: llamaInfo,
    runs,
  };
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(opts.out.replace(/\.json$/, '.md'), `${tables.join('\n\n')}\n`);
  log(`\nwrote ${opts.out}`);
}

main().catch((err: Error) => {
  process.stderr.write(`bench: ${err.message}\n`);
  process.exitCode = 1;
});
