// --speculative (MTP drafting) on the whole engine, with generated tiny Qwen3 checkpoints that
// carry an MTP layer (test/helpers/mtp-checkpoint.ts): start-up errors, greedy output token for
// token the output without drafting (batched, with stop tokens and max_tokens inside a draft,
// under preemption, with prefix caching), and acceptance (tokens per verify step).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startEngine, type EngineOptions } from '../../src/engine/engine-client.js';
import type { GenerationRequest } from '../../src/engine/types.js';
import type { SpeculativeOptions } from '../../src/engine/messages.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { writeMtpCheckpoint, type MtpCheckpointOptions } from '../helpers/mtp-checkpoint.js';
import { collectJob, engineOptions, greedyJob, startTestEngine } from '../helpers/tiny-engine.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function checkpoint(opts: MtpCheckpointOptions): string {
  const { dir } = writeMtpCheckpoint(opts);
  dirs.push(dir);
  return dir;
}

const MTP = (numDrafts: number, over: Partial<SpeculativeOptions> = {}): SpeculativeOptions => ({
  mode: 'mtp',
  numDrafts,
  mtpQuantization: 'bf16',
  mtpVocab: 100000,
  ...over,
});

const options = (modelPath: string, speculative: SpeculativeOptions | null, over: Partial<EngineOptions> = {}) =>
  engineOptions({ modelPath, speculative, maxSeqLen: 256, ...over });
const start = startTestEngine;
const job = (promptTokens: number[], maxTokens: number, extra: Partial<GenerationRequest> = {}) =>
  greedyJob(promptTokens, maxTokens, [], extra);
const collect = collectJob;

/** Prompts of pseudo-random ids (2..383), 5 to 60 tokens long. */
const PROMPTS = Array.from({ length: 6 }, (_, p) =>
  Array.from({ length: 5 + p * 11 }, (_, i) => 2 + ((i * 97 + p * 31 + ((i * i) % 13)) % 382)),
);

/** An MTP layer copied from the one main layer: drafts the model mostly agrees with. */
const COPY = checkpoint({ mtp: 'copy', numLayers: 1, seed: 7 });
/** Independent random MTP weights: drafts the model mostly rejects. */
const RANDOM = checkpoint({ mtp: 'random', seed: 7 });

test('--speculative start-up errors: no MTP weights; --mtp-quantization not what the checkpoint stores', async () => {
  await assert.rejects(
    startEngine(options(TINY_CHAT, MTP(3))),
    /--speculative: .*svc-tiny-chat has no multi-token-prediction weights \(num_nextn_predict_layers in config\.json \/ model\.layers\.\d+\.eh_proj\.weight\)/,
  );
  await assert.rejects(
    startEngine(options(checkpoint({ mtp: 'none', nextnConfig: true }), MTP(3))),
    /no tensor model\.layers\.2\.eh_proj\.weight/,
  );
  await assert.rejects(
    startEngine(options(COPY, MTP(3, { mtpQuantization: 'fp8' }))),
    /--mtp-quantization fp8 does not match the checkpoint's multi-token-prediction weights, stored as bf16/,
  );
  await assert.rejects(
    startEngine(options(checkpoint({ mtp: 'random', mtpDtype: 'f32' }), MTP(3))),
    /--mtp-quantization bf16 does not match the checkpoint's multi-token-prediction weights, stored as f32/,
  );
  // Without --speculative the MTP tensors are ignored.
  const plain = await start(options(checkpoint({ mtp: 'random', mtpDtype: 'f32' }), null));
  assert.equal(plain.info.drafter, null);
});

test('--speculative: the MTP layer KV counts in KV bytes per token (one more layer)', async () => {
  const [a, b] = await Promise.all([start(options(RANDOM, null)), start(options(RANDOM, MTP(3)))]);
  assert.equal(b.info.drafter, 'mtp');
  // bf16 K and V, 2 KV heads of 16: 128 bytes per layer per token; 2 main layers + the MTP layer.
  assert.equal(a.info.kvBytesPerToken, 2 * 128);
  assert.equal(b.info.kvBytesPerToken, 3 * 128);
});

for (const [label, path, drafts] of [
  ['copied MTP layer', COPY, 3],
  ['random MTP layer', RANDOM, 2],
] as const) {
  test(`--speculative greedy output is token for token the plain output (${label}, ${drafts} drafts)`, async () => {
    const [a, b] = await Promise.all([start(options(path, null)), start(options(path, MTP(drafts)))]);
    const alone: number[][] = [];
    for (const p of PROMPTS) {
      const want = await collect(a.submit(job(p, 40)));
      alone.push(want.ids);
      assert.deepEqual((await collect(b.submit(job(p, 40)))).ids, want.ids);
    }
    const together = await Promise.all(PROMPTS.map((p) => collect(b.submit(job(p, 40)))));
    assert.deepEqual(
      together.map((r) => r.ids),
      alone,
    );
    // A stop token and max_tokens landing inside a draft.
    const ref = alone[3];
    const stop = ref[11];
    const stopped = job(PROMPTS[3], 40, { stopTokenIds: [stop] });
    const r = await collect(b.submit(stopped));
    assert.deepEqual(r.ids, (await collect(a.submit(stopped))).ids);
    assert.equal(r.ids.at(-1), stop);
    assert.equal(r.reason, 'stop');
    for (const max of [1, 2, 5, 9]) assert.deepEqual((await collect(b.submit(job(PROMPTS[3], max)))).ids, ref.slice(0, max));
    const s = b.stats();
    assert.ok(s.verifySteps > 0 && s.draftedTokens > 0 && s.acceptedDraftTokens <= s.draftedTokens);
    assert.equal(s.kvBlocksUsed, 0, 'every block back in the pool');
  });
}

test('--speculative under preemption (recompute and swap) and prefix caching: still the plain output', async () => {
  const plain = await start(options(COPY, null));
  const want = await Promise.all(PROMPTS.map((p) => collect(plain.submit(job(p, 40)))));
  // A pool of 34 blocks of 4 tokens for 6 sequences of up to 100: preemptions are certain.
  // KV per token with MTP: the main layer and the MTP layer, 128 bytes each (bf16).
  const memoryBytes = plain.info.weightBytes + 34 * 4 * 256;
  const tight = { blockSize: 4, maxSeqLen: 128, enablePrefixCaching: true, gpuMemoryUtilization: 1, oomGuardMb: 0, memoryBytes };
  for (const swapSpaceBytes of [0, 1 << 20]) {
    const b = await start(options(COPY, MTP(3), { ...tight, swapSpaceBytes }));
    assert.equal(b.info.kvBlocks, 34);
    const got = await Promise.all(PROMPTS.map((p) => collect(b.submit(job(p, 40)))));
    assert.deepEqual(
      got.map((r) => r.ids),
      want.map((r) => r.ids),
    );
    // The same prompts again: prefix-cache hits carry the MTP layer's KV too.
    const again = await Promise.all(PROMPTS.map((p) => collect(b.submit(job(p, 40)))));
    assert.deepEqual(
      again.map((r) => r.ids),
      want.map((r) => r.ids),
    );
    const s = b.stats();
    assert.ok(s.preemptions > 0, `preemptions ${s.preemptions}`);
    if (swapSpaceBytes > 0) assert.ok(s.swapOuts > 0, `swap-outs ${s.swapOuts}`);
    assert.ok(s.prefixHitTokens > 0, `prefix hits ${s.prefixHitTokens}`);
    assert.ok(s.acceptedDraftTokens > 0);
    await b.shutdown();
  }
});

test('--speculative acceptance: tokens per verify step on the generated checkpoints', async () => {
  const rows: string[] = [];
  for (const [label, path] of [
    ['copied MTP layer', COPY],
    ['copied MTP layer, 5% noise', checkpoint({ mtp: 'copy', numLayers: 1, seed: 7, noise: 0.05 })],
    ['random MTP layer', RANDOM],
  ] as const) {
    for (const drafts of [1, 3]) {
      const e = await start(options(path, MTP(drafts)));
      for (const p of PROMPTS) await collect(e.submit(job(p, 64)));
      const s = e.stats();
      const perStep = (s.verifySteps + s.acceptedDraftTokens) / s.verifySteps;
      rows.push(
        `${label}, ${drafts} drafts: ${perStep.toFixed(2)} tokens per verify step (${s.acceptedDraftTokens}/${s.draftedTokens} drafts accepted)`,
      );
      if (path === COPY) assert.ok(perStep > 1 + 0.5 * drafts, rows.at(-1));
      await e.shutdown();
    }
  }
  console.log(rows.join('\n'));
});
