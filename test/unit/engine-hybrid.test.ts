// The engine runs a hybrid model (Qwen3.5: Gated DeltaNet layers with per-sequence recurrent state,
// beside attention over the paged KV cache) as the model runs by hand: chunked prefill and batching
// keep each sequence's state in its own slot, and with prefix caching a later prompt resumes from a
// recurrent-state snapshot — the same greedy tokens as without the cache, computed from fewer tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { nativeOps } from '../../src/kernels/native.js';
import { createModel } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import type { TokenLogprob } from '../../src/engine/types.js';
import { PagedRun } from '../helpers/paged-run.js';
import { collectJob, engineOptions, greedyJob, greedyPick, startTestEngine } from '../helpers/tiny-engine.js';

const DIR = resolve('..', 'shared', 'models', 'arch-fixtures', 'ferrl-tiny_qwen35');
const checkpoint = loadCheckpoint(DIR, { fastLoad: false });
const NEW_TOKENS = 6;
const EOS = 1;

/** Greedy tokens and their log-probabilities from one whole-prompt forward, then token by token. */
function directRun(prompt: number[]): { ids: number[]; logprobs: number[] } {
  const model = createModel(checkpoint, nativeOps);
  const vocab = model.config.vocabSize;
  const run = new PagedRun(model, [prompt.length + NEW_TOKENS], 4, 'bf16'); // the engine's KV dtype (engineOptions)
  let logits = run.step([{ seq: 0, tokens: prompt }], false);
  const ids: number[] = [];
  const logprobs: number[] = [];
  for (let k = 0; k < NEW_TOKENS; k++) {
    const { id: best, logprob } = greedyPick(logits, vocab);
    ids.push(best);
    logprobs.push(logprob);
    if (best === EOS) break;
    if (k + 1 < NEW_TOKENS) logits = run.step([{ seq: 0, tokens: [best] }], false);
  }
  return { ids, logprobs };
}

function assertSame(got: { ids: number[]; logprobs: TokenLogprob[] }, want: { ids: number[]; logprobs: number[] }, what: string): void {
  assert.deepEqual(got.ids, want.ids, `${what}: tokens`);
  got.logprobs.forEach((l, i) =>
    assert.ok(Math.abs(l.logprob - want.logprobs[i]!) < 1e-4, `${what}: logprob ${i}: ${l.logprob} vs ${want.logprobs[i]}`),
  );
}

const job = (prompt: number[]) => greedyJob(prompt, NEW_TOKENS, [EOS], { logprobs: 1 });
const range = (n: number, from: number) => Array.from({ length: n }, (_, i) => 2 + ((from + i * 7) % 60));

const first = range(21, 3);
const other = [...first.slice(0, 6), ...range(15, 11)];

test('chunked prefill and batching: each sequence keeps its own recurrent state', async () => {
  const engine = await startTestEngine(engineOptions({ modelPath: DIR, maxSeqLen: 64, maxPrefillTokens: 8, blockSize: 4 }));
  const prompts = [first, other, range(9, 40)];
  const outs = await Promise.all(prompts.map((p) => collectJob(engine.submit(job(p)))));
  outs.forEach((o, i) => assertSame(o, directRun(prompts[i]!), `prompt ${i}`));
  // Preempted and recomputed or not, alone it is the same.
  assertSame(await collectJob(engine.submit(job(first))), directRun(first), 'alone');
});

test('prefix caching: a second turn resumes from a recurrent-state snapshot and gives the tokens computed from scratch', async () => {
  const engine = await startTestEngine(
    engineOptions({ modelPath: DIR, maxSeqLen: 64, blockSize: 4, enablePrefixCaching: true, ssmCacheSlots: 16, ssmCheckpointInterval: 2 }),
  );
  const submit = async (prompt: number[]) => {
    let cached = 0;
    const h = engine.submit(job(prompt));
    const out = { ids: [] as number[], logprobs: [] as TokenLogprob[] };
    for await (const ev of h.events) {
      if (ev.type !== 'tokens') continue;
      cached = ev.cachedTokens ?? cached;
      out.ids.push(...ev.ids);
      out.logprobs.push(...(ev.logprobs ?? []));
    }
    return { cached, out };
  };
  const turn1 = await submit(first);
  assertSame(turn1.out, directRun(first), 'first turn');
  assert.equal(turn1.cached, 0);
  // The next turn extends the first prompt and its answer.
  const second = [...first, ...turn1.out.ids, 9, 8, 7, 6];
  const turn2 = await submit(second);
  assertSame(turn2.out, directRun(second), 'second turn, from the snapshot');
  // The first prompt's last whole block before its last token ends at 20: resumed there.
  assert.equal(turn2.cached, 20);
  // Same text for 6 tokens, then another: no snapshot inside the shared part (the first is at 8), so from scratch.
  const fork = await submit(other);
  assertSame(fork.out, directRun(other), 'another prompt sharing a short prefix');
  assert.equal(fork.cached, 0);
  // The same prompt again resumes before its last token, at the snapshot at 20.
  const again = await submit(first);
  assertSame(again.out, directRun(first), 'the first prompt again');
  assert.equal(again.cached, 20);
});

test('speculative decoding is refused for a hybrid model at start-up', async () => {
  await assert.rejects(
    startTestEngine(
      engineOptions({ modelPath: DIR, maxSeqLen: 64, speculative: { mode: 'ngram', numDrafts: 2, mtpQuantization: 'bf16', mtpVocab: 0 } }),
    ),
    /not supported for qwen3_5/,
  );
});
