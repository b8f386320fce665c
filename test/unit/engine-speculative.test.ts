// Speculative decoding on the real engine (svc-tiny-chat) with the n-gram drafter: greedy output is
// token for token the output without it — alone and batched with plain sequences, with stop tokens
// and max_tokens landing inside a draft, with log-probabilities, under preemption (recompute and
// swap) with prefix caching — and copy tasks accept drafts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { EngineOptions } from '../../src/engine/engine-client.js';
import type { GenerationRequest } from '../../src/engine/types.js';
import type { SpeculativeOptions } from '../../src/engine/messages.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { collectJob, engineOptions, greedyJob, startTestEngine } from '../helpers/tiny-engine.js';

const IM_END = 151645;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')),
);
const chat = (q: string) => tokenizer.encode(`<|im_start|>user\n${q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`).ids;
const PROMPTS = [
  chat('Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river bank.'),
  chat('Reverse this list: apple, banana, cherry, date, elderberry, fig, grape.'),
  chat('Fix the misspelled keyword in this line: retrun x + y; retrun x + y; retrun x + y;'),
  chat('What is the capital of France?'),
  chat('Count from one to ten.'),
  chat('Write upper case: hello world, hello world, hello world, hello world.'),
];

const job = (promptTokens: number[], maxTokens: number, extra: Partial<GenerationRequest> = {}) =>
  greedyJob(promptTokens, maxTokens, [IM_END], extra);
const collect = collectJob;
const start = (speculative: SpeculativeOptions | null, over: Partial<EngineOptions> = {}) =>
  startTestEngine(engineOptions({ speculative, ...over }));

const plain = start(null);
const ngram = start({ mode: 'ngram', numDrafts: 4, mtpQuantization: 'bf16', mtpVocab: 0 });

test('n-gram drafting: greedy output identical to plain decoding, one at a time and all at once', async () => {
  const [a, b] = await Promise.all([plain, ngram]);
  assert.equal(b.info.drafter, 'ngram');
  for (const p of PROMPTS) {
    assert.deepEqual((await collect(b.submit(job(p, 60)))).ids, (await collect(a.submit(job(p, 60)))).ids);
  }
  const together = await Promise.all(PROMPTS.map((p) => collect(b.submit(job(p, 60)))));
  const alone = await Promise.all(PROMPTS.map((p) => collect(a.submit(job(p, 60)))));
  assert.deepEqual(
    together.map((r) => r.ids),
    alone.map((r) => r.ids),
  );
  const s = b.stats();
  assert.ok(s.draftedTokens > 0 && s.acceptedDraftTokens > 0, `drafted ${s.draftedTokens}, accepted ${s.acceptedDraftTokens}`);
  assert.ok(s.verifySteps > 0 && s.acceptedDraftTokens <= s.draftedTokens);
  assert.equal(s.kvBlocksUsed, 0, 'every block back in the pool (rejected drafts rolled back)');
  assert.equal(a.stats().draftedTokens, 0);
});

test('n-gram drafting: max_tokens and stop tokens inside a draft end the output where plain decoding does', async () => {
  const [a, b] = await Promise.all([plain, ngram]);
  const reference = await collect(a.submit(job(PROMPTS[0], 60)));
  for (const max of [1, 2, 3, 5, 8, 13]) {
    const r = await collect(b.submit(job(PROMPTS[0], max)));
    assert.deepEqual(r.ids, reference.ids.slice(0, max), `max_tokens ${max}`);
  }
  // A token in the middle of the copied text as a stop token.
  const stop = reference.ids[Math.min(7, reference.ids.length - 1)];
  const stopped = job(PROMPTS[0], 60, { stopTokenIds: [stop] });
  const r = await collect(b.submit(stopped));
  assert.deepEqual(r.ids, (await collect(a.submit(stopped))).ids);
  assert.equal(r.ids.at(-1), stop);
  assert.equal(r.reason, 'stop');
});

test('n-gram drafting: log-probabilities of every token, as without drafting', async () => {
  const [a, b] = await Promise.all([plain, ngram]);
  const req = job(PROMPTS[2], 40, { logprobs: 3 });
  const x = await collect(a.submit(req));
  const y = await collect(b.submit(req));
  assert.deepEqual(y.ids, x.ids);
  assert.equal(y.logprobs.length, y.ids.length);
  y.logprobs.forEach((lp, i) => {
    assert.equal(lp.id, x.logprobs[i].id);
    assert.ok(Math.abs(lp.logprob - x.logprobs[i].logprob) < 1e-4, `token ${i}: ${lp.logprob} vs ${x.logprobs[i].logprob}`);
  });
});

test('n-gram drafting under preemption (recompute and swap) with prefix caching: still the plain output', async () => {
  const a = await plain;
  // Without stop tokens every sequence grows to 60 tokens: six of ~100 tokens need 7 blocks each.
  const long = (p: number[]) => job(p, 60, { stopTokenIds: [] });
  const alone = await Promise.all(PROMPTS.map((p) => collect(a.submit(long(p)))));
  // A pool of 20 blocks of 16 tokens (a 256-token context fits) for six sequences of ~100: preemptions are certain.
  const blocks = 20;
  const memoryBytes = Math.ceil(a.info.weightBytes + (blocks + 0.5) * 16 * a.info.kvBytesPerToken);
  for (const swapSpaceBytes of [0, 64 << 20]) {
    const b = await start(
      { mode: 'ngram', numDrafts: 4, mtpQuantization: 'bf16', mtpVocab: 0 },
      { memoryBytes, maxSeqLen: 256, gpuMemoryUtilization: 1, oomGuardMb: 0, enablePrefixCaching: true, swapSpaceBytes },
    );
    assert.equal(b.info.kvBlocks, blocks);
    const together = await Promise.all(PROMPTS.map((p) => collect(b.submit(long(p)))));
    assert.deepEqual(
      together.map((r) => r.ids),
      alone.map((r) => r.ids),
    );
    const s = b.stats();
    assert.ok(s.preemptions > 0, `preemptions ${s.preemptions}`);
    if (swapSpaceBytes > 0) assert.ok(s.swapOuts > 0, `swap-outs ${s.swapOuts}`);
    assert.ok(s.acceptedDraftTokens > 0);
    assert.equal(s.kvBlocksUsed, 0);
  }
});
