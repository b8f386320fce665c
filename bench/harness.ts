// What the svc-vs-llama.cpp entry points (run.ts, moe.ts) share: command-line parsing, opening
// the llama.cpp side (a native llama-server, else node-llama-cpp in-process), running one
// engine's measurements so that a failure becomes a result instead of ending the run, and the
// machine description written with the results.
import { accessSync, constants } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openLlamaCpp, type LlamaCppInfo } from './llamacpp.js';
import { openLlamaServer } from './llama-server.js';
import { measureEngine, measureEngines, type BenchEngine, type BenchSettings } from './measure.js';
import type { EngineOutcome } from './report.js';

/** The repository root (this file runs as dist/bench/harness.js). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/**
 * `--name value` / `--name=value` flags and bare switches. `--help` prints usage and exits;
 * anything not in `known` or `switches` is an error.
 */
export function parseFlags(
  argv: string[],
  known: readonly string[],
  switches: readonly string[],
  usage: string,
): { flags: Map<string, string>; switches: Set<string> } {
  const flags = new Map<string, string>();
  const on = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(`${usage}\n`);
      process.exit(0);
    }
    if (switches.includes(a)) {
      on.add(a);
      continue;
    }
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const eq = a.indexOf('=');
    const name = eq >= 0 ? a.slice(0, eq) : a;
    if (!known.includes(name)) throw new Error(`unknown flag ${name}`);
    const value = eq >= 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`${name} needs a value`);
    flags.set(name, value);
  }
  return { flags, switches: on };
}

export function list<T extends string>(raw: string, allowed: readonly T[], what: string): T[] {
  const items = raw
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const x of items) if (!allowed.includes(x as T)) throw new Error(`unknown ${what} "${x}" (known: ${allowed.join(', ')})`);
  return items as T[];
}

export function positiveInt(raw: string, flag: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer, got "${raw}"`);
  return n;
}

/** An executable's absolute path, checked up front so a typo fails before minutes of generation. */
export function executable(raw: string | undefined, flag: string): string | null {
  if (!raw) return null;
  const path = resolve(raw);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`${flag}: ${path} is not an executable file`);
  }
  return path;
}

/** --threads, else $SVC_THREADS, else the core count. */
export function threadCount(raw: string | undefined): number {
  if (raw) return positiveInt(raw, '--threads');
  return process.env.SVC_THREADS ? positiveInt(process.env.SVC_THREADS, 'SVC_THREADS') : availableParallelism();
}

/**
 * Opens the engines one after another (each load measured while the others, already open, sit
 * idle) and measures them together, alternating rep by rep (measureEngines). A failure becomes that
 * engine's outcome instead of ending the run: one that fails to open is left out, and when the joint
 * measurement fails each engine is measured alone, so the error lands on the one that failed.
 */
export async function runEngines(opens: (() => Promise<BenchEngine>)[], settings: BenchSettings): Promise<EngineOutcome[]> {
  const engines: (BenchEngine | null)[] = [];
  const outcomes: EngineOutcome[] = [];
  try {
    for (const open of opens) {
      try {
        engines.push(await open());
        outcomes.push({ error: 'not measured' });
      } catch (err) {
        const message = (err as Error).message;
        log(`    failed: ${message}`);
        engines.push(null);
        outcomes.push({ error: message });
      }
    }
    const open = engines.flatMap((e, i) => (e ? [{ e, i }] : []));
    try {
      const results = await measureEngines(
        open.map((o) => o.e),
        settings,
        log,
      );
      open.forEach((o, j) => (outcomes[o.i] = results[j]!));
    } catch (err) {
      log(`    joint measurement failed (${(err as Error).message}); measuring each engine alone`);
      for (const o of open) {
        try {
          outcomes[o.i] = await measureEngine(o.e, settings, log);
        } catch (err2) {
          const message = (err2 as Error).message;
          log(`    failed: ${message}`);
          outcomes[o.i] = { error: message };
        }
      }
    }
    return outcomes;
  } finally {
    for (const e of engines) await e?.close().catch((err: Error) => log(`    close failed: ${err.message}`));
  }
}

/** Runs the measurements on one engine; a failure becomes the outcome instead of ending the run. */
export async function runEngine(open: () => Promise<BenchEngine>, settings: BenchSettings): Promise<EngineOutcome> {
  let engine: BenchEngine | null = null;
  try {
    engine = await open();
    return await measureEngine(engine, settings, log);
  } catch (err) {
    const message = (err as Error).message;
    log(`    failed: ${message}`);
    return { error: message };
  } finally {
    await engine?.close().catch((err: Error) => log(`    close failed: ${err.message}`));
  }
}

export interface LlamaEngineOptions {
  /** A native llama-server binary; null: node-llama-cpp in-process. */
  llamaServer: string | null;
  threads: number;
  /** Tokens each request must hold (prompt + generated). */
  contextTokens: number;
  /** The largest concurrency measured. */
  parallel: number;
  /** The longest prompt (node-llama-cpp's batch, so a prompt is one llama_decode). */
  batchTokens: number;
}

/** The llama.cpp side on a GGUF file, with the same threads and request sizes as svc. */
export async function openLlamaEngine(ggufPath: string, o: LlamaEngineOptions): Promise<BenchEngine & { info: LlamaCppInfo }> {
  return o.llamaServer
    ? openLlamaServer(ggufPath, {
        binary: o.llamaServer,
        threads: o.threads,
        contextTokens: o.contextTokens,
        parallel: o.parallel,
        startupTimeoutMs: 10 * 60_000,
        log,
      })
    : openLlamaCpp(ggufPath, { threads: o.threads, contextTokens: o.contextTokens, batchTokens: o.batchTokens });
}

export function machineInfo(): Record<string, unknown> {
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    logicalCores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}
