// The newer architectures through the real engine (worker, scheduler, paged KV pool, recurrent-state
// slots where the model has them): each arch-fixture checkpoint's greedy tokens and log-probabilities
// equal a direct run of the same model, with prefill in small chunks and two sequences batched. The
// fixtures' numerics against Hugging Face are checked in their own arch-* tests; this checks the
// engine's part: DeepSeek-V2's latent KV layout, GPT-OSS's sinks and windows, Mamba2's attention-free
// stack (no KV at all), Nemotron-H's hybrid of state and KV.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after } from 'node:test';
import { nativeOps } from '../../src/kernels/native.js';
import { createModel } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { PagedRun } from '../helpers/paged-run.js';
import { collectJob, engineOptions, greedyJob, greedyPick, startTestEngine } from '../helpers/tiny-engine.js';

const FIXTURES = resolve('..', 'shared', 'models', 'arch-fixtures');
const NEW_TOKENS = 5;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The fixture as a model directory (config.json + model.safetensors), as svc serve takes one. */
function modelDir(folder: string): string {
  const files = readdirSync(join(FIXTURES, folder));
  const config = files.find((f) => f.endsWith('_config.json'))!;
  const weights = files.find((f) => f.endsWith('.safetensors') && !f.includes('mxfp4'))!;
  const dir = mkdtempSync(join(tmpdir(), 'svc-arch-'));
  dirs.push(dir);
  symlinkSync(join(FIXTURES, folder, config), join(dir, 'config.json'));
  symlinkSync(join(FIXTURES, folder, weights), join(dir, 'model.safetensors'));
  return dir;
}

for (const folder of ['neural-api-deepseek_v2', 'neural-api-gpt_oss', 'neural-api-mamba2', 'neural-api-nemotronh']) {
  test(`${folder}: the engine's greedy tokens equal a direct run (chunked prefill, two sequences batched)`, async () => {
    const dir = modelDir(folder);
    const checkpoint = loadCheckpoint(dir, { fastLoad: false });
    const vocab = checkpoint.config.vocabSize;
    const prompts = [[1, 3, 5, 7, 9, 2, 4, 6].map((t) => t % vocab), [8, 6, 4, 2, 1, 3].map((t) => t % vocab)];
    const direct = (prompt: number[]) => {
      const model = createModel(checkpoint, nativeOps);
      const run = new PagedRun(model, [prompt.length + NEW_TOKENS], 4, 'bf16'); // the engine's KV dtype
      let logits = run.step([{ seq: 0, tokens: prompt }], false);
      const out: { id: number; logprob: number }[] = [];
      for (let k = 0; k < NEW_TOKENS; k++) {
        out.push(greedyPick(logits, vocab));
        if (k + 1 < NEW_TOKENS) logits = run.step([{ seq: 0, tokens: [out[k]!.id] }], false);
      }
      return out;
    };
    const engine = await startTestEngine(engineOptions({ modelPath: dir, maxSeqLen: 16, maxPrefillTokens: 4, blockSize: 4 }));
    const got = await Promise.all(prompts.map((p) => collectJob(engine.submit(greedyJob(p, NEW_TOKENS, [], { logprobs: 1 })))));
    got.forEach((g, i) => {
      const want = direct(prompts[i]!);
      assert.equal(g.reason, 'length');
      assert.deepEqual(
        g.ids,
        want.map((w) => w.id),
        `prompt ${i}`,
      );
      g.logprobs.forEach((l, k) =>
        assert.ok(Math.abs(l.logprob - want[k]!.logprob) < 1e-3, `prompt ${i} logprob ${k}: ${l.logprob} vs ${want[k]!.logprob}`),
      );
    });
  });
}
