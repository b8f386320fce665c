// The benchmark's tables (bench/report.ts): per-format targets (the K-quant mixes are held to
// prefill ≥ 1.5×, Q8_0's load time to ≤ 2.0× llama.cpp's), ✓/✗ marks, the load rows, n/a where an
// engine has no figure (node-llama-cpp's in-process load), which llama.cpp was measured, and the two
// roofline rows (decode after the long prompt, the 1-stream aggregate on short ones).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BenchSettings, EngineResult } from '../../bench/measure.js';
import { formatRun, targetsOf, type CheckpointRun } from '../../bench/report.js';

const settings: BenchSettings = { promptTokens: 512, decodeTokens: 128, shortPromptTokens: 16, concurrency: [1, 8], reps: 1 };

function result(scale: number, load: { ms: number; rss: number }): EngineResult {
  return {
    prefillTokS: 100 * scale,
    decodeTokS: 20 * scale,
    ttftMs: 1000 / scale,
    aggregateTokS: { '1': 20 * scale, '8': 60 * scale },
    latenciesMs: {},
    loadMs: load.ms,
    peakLoadRssBytes: load.rss,
  };
}

function run(format: string, svc: EngineResult, llamacpp: EngineResult, llamaCppBuild: string): CheckpointRun {
  return {
    model: 'qwen3',
    format,
    svcCheckpoint: 'a.gguf',
    llamaCheckpoint: 'a.gguf',
    weightBytes: 2 ** 30,
    fileBytes: 2 ** 30,
    quantizer: 'built-in quantizer',
    llamaCppBuild,
    bandwidthGbS: 40 * 1.073741824,
    rooflineTokS: 40,
    svc,
    llamacpp,
  };
}

/** The cells of the row whose label starts with `label`. */
function row(table: string, label: string): string[] {
  const line = table.split('\n').find((l) => l.startsWith(`| ${label}`));
  assert.ok(line, `no row ${label} in\n${table}`);
  return line
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

test('targets by format: K-quant mixes need prefill 1.5×, Q8_0 a load time within 2×', () => {
  assert.deepEqual(targetsOf('q4_k_m'), { prefill: 1.5, decode: 1.0 });
  assert.deepEqual(targetsOf('q5_k_m'), { prefill: 1.5, decode: 1.0 });
  assert.deepEqual(targetsOf('q8_0'), { prefill: 0.8, decode: 1.0, aggregate8: 1.5, loadMax: 2.0 });
  assert.equal(targetsOf('q4_0').loadMax, undefined);
});

test('a K-quant table: 1.2× prefill misses the 1.5× target, load rows compare both servers', () => {
  const native = 'native llama-server (0.5.0-dev, build 1, commit de3ff81)';
  const table = formatRun(
    run('q4_k_m', result(1.2, { ms: 3000, rss: 1.5 * 2 ** 30 }), result(1, { ms: 1000, rss: 2 ** 30 }), native),
    settings,
  );
  assert.match(table, /^### qwen3 Q4_K_M/);
  assert.ok(table.includes(`llama.cpp: ${native}.`));
  assert.ok(table.includes('built-in quantizer'));
  assert.deepEqual(row(table, 'prefill'), ['prefill tok/s (512-token prompt)', '120.0', '100.0', '1.20× ✗', '≥ 1.5×']);
  assert.deepEqual(row(table, 'decode tok/s'), ['decode tok/s (1 stream, 128 tokens)', '24.0', '20.0', '1.20× ✓', '≥ 1.0×']);
  assert.deepEqual(row(table, 'aggregate decode tok/s @8').slice(3), ['1.20×', '']);
  assert.deepEqual(row(table, 'load s'), ['load s (spawn → serving)', '3.00', '1.00', '3.00×', 'lower is better']);
  assert.deepEqual(row(table, 'peak RSS'), ['peak RSS while loading, GiB', '1.50', '1.00', '1.50×', 'lower is better']);
  // Against the roofline: decode after the long prompt, and the 1-stream aggregate on short prompts.
  assert.ok(table.includes('roofline 40.0 tok/s at 42.9 GB/s'));
  assert.deepEqual(row(table, 'decode / memory roofline (512'), ['decode / memory roofline (512-token prompt)', '60%', '50%', '', '']);
  assert.deepEqual(row(table, 'decode / memory roofline (16'), ['decode / memory roofline (16-token prompt)', '60%', '50%', '', '']);
});

test('Q8_0 against node-llama-cpp: load figures n/a, targets as before', () => {
  const inProcess = result(1, { ms: NaN, rss: NaN });
  const table = formatRun(run('q8_0', result(2, { ms: 3000, rss: 2 ** 30 }), inProcess, 'node-llama-cpp 3.22.1 prebuilt'), settings);
  assert.deepEqual(row(table, 'prefill').slice(3), ['2.00× ✓', '≥ 0.8×']);
  assert.deepEqual(row(table, 'aggregate decode tok/s @8').slice(3), ['2.00× ✓', '≥ 1.5×']);
  assert.deepEqual(row(table, 'load s'), ['load s (spawn → serving)', '3.00', 'n/a', 'n/a', '≤ 2.0×']);
  assert.deepEqual(row(table, 'peak RSS').slice(2), ['n/a', 'n/a', 'lower is better']);
});
