// The packed-weights cache (src/model/loaders/packed-cache.ts) on real quantized GGUF files (Q4_K and
// Q6_K matrices; Q8_0 ones, the bench's format), all packed: the first load packs and writes the cache file once serving;
// the second maps every packed matrix from it (nothing packed) and generates the same tokens with
// the same log-probabilities; a truncated, version-mismatched or stale file is ignored with a log
// line and rewritten; no cache directory, no cache; an unloaded engine leaves no mapping of it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngine, type EngineLogLine, type RunningEngine } from '../../src/engine/engine-client.js';
import type { SamplingParams, TokenLogprob } from '../../src/engine/types.js';
import { packedCacheFile, type PackedCacheReport } from '../../src/model/loaders/packed-cache.js';
import { MODELS } from '../helpers/paths.js';

const SOURCE = join(MODELS, 'quant-zoo', 'stories260k-wide-q4_k_m.gguf');
const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };
/** Token ids of the 512-token vocabulary (BOS first). */
const PROMPT = [1, 100, 200, 300, 400, 50];

interface Run {
  report: PackedCacheReport | null;
  ids: number[];
  logprobs: TokenLogprob[];
  log: EngineLogLine[];
}

async function waitFor(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Loads `model` with the cache in `dir` (null: none), generates 24 greedy tokens, and (when it packed anything) waits for the cache file. */
async function run(model: string, dir: string | null): Promise<Run> {
  const log: EngineLogLine[] = [];
  const engine: RunningEngine = await startEngine(
    {
      modelPath: model,
      fastLoad: true,
      packedCacheDir: dir,
      kvCacheDtype: 'bf16',
      maxSeqLen: 64,
      maxBatchSize: 1,
      maxPrefillTokens: 64,
      maxNumSeqs: 1,
      gpuMemoryUtilization: 0.9,
      oomGuardMb: 0,
      blockSize: 16,
      enablePrefixCaching: false,
      swapSpaceBytes: 0,
    },
    undefined,
    undefined,
    (e) => log.push(e),
  );
  try {
    const handle = engine.submit({ promptTokens: PROMPT, maxTokens: 24, sampling: GREEDY, stopTokenIds: [], timeoutMs: 0, logprobs: 5 });
    const ids: number[] = [];
    const logprobs: TokenLogprob[] = [];
    for await (const ev of handle.events)
      if (ev.type === 'tokens') {
        ids.push(...ev.ids);
        logprobs.push(...(ev.logprobs ?? []));
      }
    const report = engine.info.packedCache;
    if (report !== null && report.packed > 0)
      await waitFor(() => log.some((l) => /packed-weights cache: (wrote|cannot write)/.test(l.message)), 'the cache file to be written');
    if (report !== null && report.mapped > 0)
      assert.ok(mappedFiles().includes(report.file), 'the cache file is mapped while the engine runs');
    return { report, ids, logprobs, log };
  } finally {
    await engine.shutdown();
  }
}

/** Files this process maps (every worker thread's mappings are the process's). */
function mappedFiles(): string[] {
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .map((l) => l.split(/\s+/).slice(5).join(' '))
    .filter((p) => p.startsWith('/'));
}

describe('packed-weights cache', { skip: !existsSync(SOURCE) && 'quant-zoo missing' }, () => {
  let tmp: string;
  let model: string;
  let dir: string;
  let file: string;
  let first: Run;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'svc-packed-cache-'));
    // A copy, so the stale-file case can change its modification time.
    model = join(tmp, 'model.gguf');
    copyFileSync(SOURCE, model);
    dir = join(tmp, 'cache');
    file = packedCacheFile(dir, model);
    first = await run(model, dir);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('the first load packs and writes the cache file once serving (temporary file renamed: nothing else left)', () => {
    assert.ok(first.report !== null);
    assert.equal(first.report.mapped, 0);
    assert.ok(first.report.packed > 0, 'packed matrices');
    assert.equal(first.report.ignored, 'none yet');
    assert.equal(first.report.file, file);
    assert.ok(
      first.log.some((l) => l.level === 'info' && l.message.includes(`wrote ${file}`)),
      JSON.stringify(first.log),
    );
    assert.ok(existsSync(file));
    assert.deepEqual(readdirSync(dir), [file.slice(dir.length + 1)]);
    assert.equal(first.ids.length, 24);
  });

  it('the second load maps every packed matrix, packs none, and generates the same tokens and log-probabilities; unloading unmaps it', async () => {
    const second = await run(model, dir);
    assert.ok(second.report !== null);
    assert.equal(second.report.packed, 0);
    assert.equal(second.report.mapped, first.report!.packed);
    assert.equal(second.report.mappedBytes, first.report!.packedBytes);
    assert.equal(second.report.ignored, undefined);
    assert.deepEqual(second.ids, first.ids);
    assert.deepEqual(second.logprobs, first.logprobs);
    assert.ok(!mappedFiles().includes(file), 'the cache file is unmapped once the engine is shut down');
  });

  for (const [name, damage, reason] of [
    ['a truncated file', () => truncateSync(file, Math.floor(statSync(file).size / 2)), /truncated/],
    ['another file version', () => patch(file, 8, 99), /file version 99/],
    ['a changed header', () => patch(file, 60, 0x20), /header checksum/],
    ['a changed GGUF file (modification time)', () => utimesSync(model, new Date(), new Date(Date.now() + 5000)), /another state/],
  ] as const) {
    it(`${name} is ignored with a log line, repacked, rewritten, and mapped by the next load`, async () => {
      damage();
      const bad = await run(model, dir);
      assert.equal(bad.report?.mapped, 0);
      assert.equal(bad.report?.packed, first.report!.packed);
      assert.match(bad.report?.ignored ?? '', reason);
      assert.ok(
        bad.log.some((l) => l.level === 'warn' && l.message.includes(`${file} ignored`)),
        JSON.stringify(bad.log),
      );
      assert.deepEqual(bad.ids, first.ids);
      const again = await run(model, dir);
      assert.equal(again.report?.packed, 0);
      assert.equal(again.report?.mapped, first.report!.packed);
      assert.deepEqual(again.logprobs, first.logprobs);
    });
  }

  it('Q8_0: the cached load generates what the packing load did', async () => {
    const q8 = join(tmp, 'q8.gguf');
    copyFileSync(join(MODELS, 'quant-zoo', 'stories260k-wide-q8_0.gguf'), q8);
    const packing = await run(q8, dir);
    const cached = await run(q8, dir);
    assert.ok((packing.report?.packed ?? 0) > 0);
    assert.deepEqual([cached.report?.packed, cached.report?.mapped], [0, packing.report?.packed]);
    assert.deepEqual(cached.logprobs, packing.logprobs);
  });

  it('without a cache directory (--no-packed-cache) nothing is cached', async () => {
    const off = await run(model, null);
    assert.equal(off.report, null);
    assert.deepEqual(off.ids, first.ids);
  });

  it('an unwritable cache directory is logged and serving goes on', async () => {
    const blocked = join(tmp, 'not-a-dir');
    closeSync(openSync(blocked, 'w'));
    const r = await run(model, join(blocked, 'cache'));
    assert.equal(r.report?.mapped, 0);
    assert.ok(
      r.log.some((l) => l.level === 'warn' && /cannot write .*serving goes on/.test(l.message)),
      JSON.stringify(r.log),
    );
    assert.deepEqual(r.ids, first.ids);
  });
});

/** Overwrites one byte of `path` at `at`. */
function patch(path: string, at: number, byte: number): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, Buffer.from([byte]), 0, 1, at);
  } finally {
    closeSync(fd);
  }
}
