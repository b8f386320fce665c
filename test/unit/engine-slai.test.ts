// --scheduling-policy slai on the real svc-tiny-chat engine: prefill chunks are sized from the
// measured step times, and greedy tokens are the same as fifo's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { RunningEngine } from '../../src/engine/engine-client.js';
import type { GenerationHandle } from '../../src/engine/types.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { engineOptions, greedyJob, startTestEngine } from '../helpers/tiny-engine.js';

const IM_END = 151645;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')),
);
const chat = (question: string) => tokenizer.encode(`<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`).ids;

const BASE = engineOptions({ kvCacheDtype: 'fp8', maxSeqLen: 256, maxPrefillTokens: 128 });
const request = (promptTokens: number[], maxTokens: number) => greedyJob(promptTokens, maxTokens, [IM_END]);

/** The ids of a job; `onTenth` runs when its tenth token arrives. */
async function ids(handle: GenerationHandle, onTenth?: () => void): Promise<number[]> {
  const out: number[] = [];
  for await (const ev of handle.events) {
    if (ev.type !== 'tokens') continue;
    out.push(...ev.ids);
    if (out.length === 10) onTenth?.();
  }
  return out;
}

const LONG =
  'Summarize this text in one sentence. ' +
  'The river rose slowly through the night, and by morning the low fields were under water; the farmers moved their animals to the hills. '.repeat(
    6,
  );

/** A decode stream, and once it has decoded a while (the model is fitted), three prompts (one long) arriving beside it. */
async function workload(engine: RunningEngine): Promise<number[][]> {
  let arrivals: Promise<number[]>[] = [];
  const stream = ids(engine.submit({ ...request(chat('Count from one to twenty.'), 48), stopTokenIds: [] }), () => {
    arrivals = [chat(LONG), chat('What is the capital of France?'), chat('Name three colours.')].map((p) =>
      ids(engine.submit(request(p, 6))),
    );
  });
  const first = await stream;
  return [first, ...(await Promise.all(arrivals))];
}

test('slai gives the same greedy tokens as fifo, with its prefill budget cut to the deadline', async () => {
  const long = chat(LONG);
  assert.ok(long.length > 150 && long.length < 200, `${long.length}`);
  const fifo = await startTestEngine(BASE);
  // A 1 ms deadline is below any step of this model here: every prefill beside the decode is cut.
  const slai = await startTestEngine({ ...BASE, schedulingPolicy: 'slai', tbtDeadlineMs: 1 });

  const a = await workload(fifo);
  const b = await workload(slai);
  assert.deepEqual(b, a);
  for (const out of a) assert.ok(out.length > 0);

  const fifoSteps = fifo.stats().stepTime!;
  const slaiSteps = slai.stats().stepTime!;
  assert.ok(fifoSteps.steps >= 48 && slaiSteps.steps >= 48, `${fifoSteps.steps}, ${slaiSteps.steps}`);
  assert.equal(fifoSteps.slaiLimited + fifoSteps.slaiDeferred, 0);
  // Even the floor misses 1 ms: prefill was deferred, and the floor ran between deferrals.
  assert.ok(slaiSteps.slaiLimited > 0 && slaiSteps.slaiDeferred > 0, JSON.stringify(slaiSteps));
  // The fitted costs are real numbers of milliseconds, none negative.
  for (const c of slaiSteps.costs) assert.ok(Number.isFinite(c) && c >= 0, JSON.stringify(slaiSteps.costs));
  assert.equal(slai.stats().kvBlocksUsed, 0);
});
