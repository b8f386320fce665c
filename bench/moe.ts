// MoE decode benchmark: svc against llama.cpp on the qwen3moe bench checkpoint (64 experts, top-8),
// single-stream decode against the roofline of the bytes a decode step actually reads (attention,
// routers, top-k of each expert stack, the LM head and one embedding row: activeBytesOf), not
// the whole file.
//
//   node dist/bench/moe.js [--formats q8_0,q4_k_m] [--quick | --small] [--engines svc,llamacpp]
//                          [--threads N] [--reps N] [--prompt N] [--decode N]
//                          [--world-size 2] [--rank-threads N] [--cache DIR] [--out FILE]
//                          [--svc-args "..."] [--llama-server PATH] [--llama-quantize PATH]
//
// The measurement is run.ts's (measure.ts), with no concurrency levels: TTFT, prefill, decode at
// context ≈ prompt. --world-size 2 measures svc a second time as two ranks on this machine (head
// rank 0 plus a worker, expert parallelism), each with --rank-threads kernel threads (default
// threads ÷ 2, so both runs use the same cores), and reports one rank against two.
// svc is measured first; if it cannot serve the checkpoint (no Qwen3-MoE architecture, or no
// ranks, in this build) llama.cpp is still measured, and the run ends with the reason and exit 1.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { measureReadBandwidth } from './bandwidth.js';
import { activeBytesOfArtifact, ensureCheckpoint, type ActiveBytes, type Artifact } from './gen-checkpoints.js';
import {
  executable,
  list,
  log,
  machineInfo,
  openLlamaEngine,
  parseFlags,
  positiveInt,
  REPO_ROOT,
  runEngine,
  threadCount,
} from './harness.js';
import type { LlamaCppInfo } from './llamacpp.js';
import type { BenchSettings, EngineResult } from './measure.js';
import { formatRun, type CheckpointRun, type EngineOutcome } from './report.js';
import { openSvc } from './svc.js';

const SHAPE = 'qwen3moe';
const MOE_FORMATS = ['q8_0', 'q4_0', 'q4_k_m', 'q5_k_m'] as const;
type MoeFormat = (typeof MOE_FORMATS)[number];
const ENGINES = ['svc', 'llamacpp'] as const;

const USAGE = [
  'usage: node dist/bench/moe.js [--formats q8_0,q4_k_m] [--quick | --small] [--engines svc,llamacpp] [--threads N]',
  '                              [--reps N] [--prompt N] [--decode N] [--world-size 2] [--rank-threads N]',
  '                              [--cache DIR] [--out FILE] [--svc-args "..."]',
  '                              [--llama-server PATH (or $SVC_BENCH_LLAMA_SERVER)] [--llama-quantize PATH]',
].join('\n');

interface MoeOptions {
  formats: MoeFormat[];
  engines: string[];
  small: boolean;
  threads: number;
  settings: BenchSettings;
  /** 1: svc as one process; 2: also as two ranks. */
  worldSize: number;
  /** SVC_THREADS of each rank when worldSize > 1. */
  rankThreads: number;
  cacheDir?: string;
  out: string;
  svcArgs: string[];
  llamaServer: string | null;
  llamaQuantize: string | null;
}

function parseCli(argv: string[]): MoeOptions {
  const known = [
    '--formats',
    '--engines',
    '--threads',
    '--reps',
    '--prompt',
    '--decode',
    '--world-size',
    '--rank-threads',
    '--cache',
    '--out',
    '--svc-args',
    '--llama-server',
    '--llama-quantize',
  ];
  const { flags, switches } = parseFlags(argv, known, ['--quick', '--small'], USAGE);
  const get = (f: string) => flags.get(f);
  const small = switches.has('--small');
  // Decode at context ≈ 512 like run.ts, so the dense qwen3 figures compare; no concurrency levels.
  const base: BenchSettings = small
    ? { promptTokens: 32, decodeTokens: 16, shortPromptTokens: 8, concurrency: [], reps: 1 }
    : switches.has('--quick')
      ? { promptTokens: 128, decodeTokens: 32, shortPromptTokens: 16, concurrency: [], reps: 1 }
      : { promptTokens: 512, decodeTokens: 128, shortPromptTokens: 16, concurrency: [], reps: 3 };
  const int = (f: string, fallback: number) => (get(f) ? positiveInt(get(f)!, f) : fallback);
  const settings: BenchSettings = {
    ...base,
    promptTokens: int('--prompt', base.promptTokens),
    decodeTokens: int('--decode', base.decodeTokens),
    reps: int('--reps', base.reps),
  };
  if (settings.decodeTokens < 2) throw new Error('--decode must be at least 2 (decode rate is measured between token 1 and N)');
  const worldSize = int('--world-size', 1);
  if (worldSize > 2) throw new Error(`--world-size: 1 or 2, got ${worldSize}`);
  const threads = threadCount(get('--threads'));
  return {
    formats: list(get('--formats') ?? 'q8_0', MOE_FORMATS, 'format'),
    engines: list(get('--engines') ?? ENGINES.join(','), ENGINES, 'engine'),
    small,
    threads,
    settings,
    worldSize,
    rankThreads: int('--rank-threads', Math.max(1, Math.floor(threads / worldSize))),
    cacheDir: get('--cache') ? resolve(get('--cache')!) : undefined,
    out: resolve(get('--out') ?? resolve(REPO_ROOT, 'bench', 'results', small ? 'moe-small.json' : 'moe.json')),
    svcArgs: (get('--svc-args') ?? '').split(/\s+/).filter(Boolean),
    llamaServer: executable(get('--llama-server') ?? process.env.SVC_BENCH_LLAMA_SERVER, '--llama-server'),
    llamaQuantize: executable(get('--llama-quantize'), '--llama-quantize'),
  };
}

const isResult = (o: EngineOutcome): o is EngineResult => o !== null && !('error' in o);

/**
 * A start-up failure of svc restated as what it most likely is: `svc serve` exited before it
 * served, which for this checkpoint means the build lacks the architecture (or the ranks).
 * The last lines of svc's own output say which.
 */
function explainSvcFailure(o: EngineOutcome, artifact: Artifact, worldSize: number): EngineOutcome {
  if (o === null || isResult(o) || !/before it was ready/.test(o.error)) return o;
  const output = o.error.slice(o.error.indexOf('output:') + 'output:'.length).trim();
  // svc's last line is its reason ("svc: unsupported model architecture …").
  const said = output.split('\n').filter(Boolean).pop() ?? '(no output)';
  const what = worldSize > 1 ? `as ${worldSize} ranks (--rank/--world-size)` : `(architecture ${artifact.shape.family})`;
  return { error: `svc refused ${artifact.path} ${what}: ${said}` };
}

interface MoeRun {
  format: MoeFormat;
  checkpoint: string;
  fileBytes: number;
  quantizer: string;
  activeBytes: ActiveBytes;
  /** bandwidth ÷ active bytes: the single-stream decode ceiling. */
  rooflineTokS: number;
  /** bandwidth ÷ all weight bytes: the ceiling if every expert were read each step. */
  denseRooflineTokS: number;
  svc: EngineOutcome;
  /** svc as worldSize ranks (null when --world-size 1). */
  svcRanks: EngineOutcome;
  llamacpp: EngineOutcome;
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(3)} GiB`;

function describe(r: MoeRun, a: Artifact): string {
  const moe = a.shape.moe!;
  const b = r.activeBytes;
  return [
    `${a.shape.name}: ${a.shape.numLayers} layers, ${moe.numExperts} experts, top-${moe.numExpertsPerTok}, expert FFN ${moe.moeIntermediateSize}.`,
    `Per token ${gib(b.active)} of ${gib(b.total)} (${(b.total / b.active).toFixed(2)}× less): attention ${gib(b.attention)}, ` +
      `experts ${gib(b.experts)}, LM head ${gib(b.lmHead)}, routers ${gib(b.router)}, norms and embedding row ${gib(b.norms + b.embeddingRow)}; ` +
      `reading every weight would cap decode at ${r.denseRooflineTokS.toFixed(1)} tok/s.`,
  ].join('\n');
}

/** svc as one process against svc as ranks: decode tok/s and its share of the roofline. */
function formatRanks(r: MoeRun, o: MoeOptions): string {
  const threads = (n: number) => `${n} thread${n === 1 ? '' : 's'}`;
  const rows: [string, EngineOutcome][] = [
    [`svc, 1 rank × ${threads(o.threads)}`, r.svc],
    [`svc, ${o.worldSize} ranks × ${threads(o.rankThreads)}`, r.svcRanks],
  ];
  const cell = (x: EngineOutcome, f: (e: EngineResult) => string) => (isResult(x) ? f(x) : x ? 'error' : '—');
  const lines = [
    '| svc | decode tok/s | of roofline | prefill tok/s |',
    '|-----|-------------:|------------:|--------------:|',
    ...rows.map(
      ([label, x]) =>
        `| ${label} | ${cell(x, (e) => e.decodeTokS.toFixed(1))} | ${cell(x, (e) => `${((100 * e.decodeTokS) / r.rooflineTokS).toFixed(0)}%`)} | ${cell(x, (e) => e.prefillTokS.toFixed(1))} |`,
    ),
  ];
  if (isResult(r.svc) && isResult(r.svcRanks))
    lines.push('', `${o.worldSize} ranks / 1 rank: decode ${(r.svcRanks.decodeTokS / r.svc.decodeTokS).toFixed(2)}×.`);
  if (r.svcRanks && !isResult(r.svcRanks)) lines.push('', `svc ranks failed: ${r.svcRanks.error.split('\n')[0]}`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parseCli(process.argv.slice(2));
  const s = o.settings;
  log(
    `svc-bench moe: ${o.threads} threads; prompt ${s.promptTokens}, decode ${s.decodeTokens}, ${s.reps} rep(s)` +
      `${o.worldSize > 1 ? `; svc also as ${o.worldSize} ranks × ${o.rankThreads} threads` : ''}${o.small ? ' (small checkpoint)' : ''}`,
  );
  const bandwidth = await measureReadBandwidth(o.threads, o.small ? 256 << 20 : 1 << 30);
  log(`memory read bandwidth: ${bandwidth.gbPerS.toFixed(1)} GB/s (${bandwidth.method})`);

  const contextTokens = s.promptTokens + s.decodeTokens + 16;
  const svcRun = (artifact: Artifact, worldSize: number) =>
    runEngine(
      () =>
        openSvc(artifact.path, {
          repoRoot: REPO_ROOT,
          threads: worldSize > 1 ? o.rankThreads : o.threads,
          maxSeqLen: contextTokens,
          maxBatchSize: 1,
          extraArgs: o.svcArgs,
          startupTimeoutMs: 10 * 60_000,
          log,
          worldSize,
        }),
      s,
    ).then((x) => explainSvcFailure(x, artifact, worldSize));

  const runs: MoeRun[] = [];
  const tables: string[] = [];
  let llamaInfo: LlamaCppInfo | null = null;
  for (const format of o.formats) {
    const artifact = ensureCheckpoint(`${SHAPE}-${format}`, {
      small: o.small,
      cacheDir: o.cacheDir,
      llamaQuantize: o.llamaQuantize ?? undefined,
      log,
    });
    const activeBytes = activeBytesOfArtifact(artifact);
    log(`${SHAPE} ${format}:`);
    const svc = o.engines.includes('svc') ? await svcRun(artifact, 1) : null;
    const svcRanks = o.engines.includes('svc') && o.worldSize > 1 ? await svcRun(artifact, o.worldSize) : null;
    const llamacpp = o.engines.includes('llamacpp')
      ? await runEngine(async () => {
          const engine = await openLlamaEngine(artifact.path, {
            llamaServer: o.llamaServer,
            threads: o.threads,
            contextTokens,
            parallel: 1,
            batchTokens: s.promptTokens,
          });
          llamaInfo = engine.info;
          return engine;
        }, s)
      : null;
    const bytesPerS = bandwidth.gbPerS * 1e9;
    const run: MoeRun = {
      format,
      checkpoint: artifact.path,
      fileBytes: statSync(artifact.path).size,
      quantizer: artifact.quantizer,
      activeBytes,
      rooflineTokS: bytesPerS / activeBytes.active,
      denseRooflineTokS: bytesPerS / activeBytes.total,
      svc,
      svcRanks,
      llamacpp,
    };
    runs.push(run);
    // run.ts's table (svc | llama.cpp | ratio | target), its roofline row on the active bytes.
    const checkpointRun: CheckpointRun = {
      model: SHAPE,
      format,
      svcCheckpoint: artifact.path,
      llamaCheckpoint: artifact.path,
      weightBytes: activeBytes.active,
      fileBytes: run.fileBytes,
      quantizer: artifact.quantizer,
      llamaCppBuild: (llamaInfo as LlamaCppInfo | null)?.release ?? null,
      bandwidthGbS: bandwidth.gbPerS,
      rooflineTokS: run.rooflineTokS,
      svc,
      llamacpp,
    };
    const parts = [formatRun(checkpointRun, s), describe(run, artifact)];
    if (o.worldSize > 1 && o.engines.includes('svc')) parts.push(formatRanks(run, o));
    const table = parts.join('\n\n');
    tables.push(table);
    process.stdout.write(`\n${table}\n`);
  }

  mkdirSync(dirname(o.out), { recursive: true });
  const summary = {
    generatedAt: new Date().toISOString(),
    settings: { ...s, threads: o.threads, worldSize: o.worldSize, rankThreads: o.rankThreads },
    machine: machineInfo(),
    bandwidth,
    llamaCpp: llamaInfo,
    runs,
  };
  writeFileSync(o.out, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(o.out.replace(/\.json$/, '.md'), `${tables.join('\n\n')}\n`);
  log(`\nwrote ${o.out}`);

  // svc not serving the checkpoint is a failed run, whatever llama.cpp did.
  const svcErrors = runs.flatMap((r) => [r.svc, r.svcRanks]).filter((x): x is { error: string } => x !== null && !isResult(x));
  if (svcErrors.length) {
    process.stderr.write(`moe bench: ${svcErrors[0].error.split('\n')[0]}\n`);
    process.exitCode = 1;
  }
}

main().catch((err: Error) => {
  process.stderr.write(`moe bench: ${err.message}\n`);
  process.exitCode = 1;
});
