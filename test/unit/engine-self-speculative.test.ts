// Self-speculative decoding on the real engine (svc-tiny-chat): greedy output is token for token
// the output without it — alone and batched, with stop tokens and max_tokens landing inside a
// draft — drafts are accepted, every rejected draft's KV goes back to the pool, and seeded
// sampling runs through the verify's speculative sampling.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type { GenerationRequest } from '../../src/engine/types.js';
import type { SpeculativeOptions } from '../../src/engine/messages.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { collectJob, engineOptions, greedyJob, GREEDY, startTestEngine } from '../helpers/tiny-engine.js';

const IM_END = 151645;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')),
);
const chat = (q: string, think = false) =>
  tokenizer.encode(`<|im_start|>user\n${q}<|im_end|>\n<|im_start|>assistant\n${think ? '' : '<think>\n\n</think>\n\n'}`).ids;
const PROMPTS = [
  chat('Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river bank.'),
  chat('What is the capital of France?', true),
  chat('Give me a JSON object with name Alice and age 30', true),
  chat('What sound does a cow make?'),
  chat('Count from one to ten.'),
];

const job = (promptTokens: number[], maxTokens: number, extra: Partial<GenerationRequest> = {}) =>
  greedyJob(promptTokens, maxTokens, [IM_END], extra);
const collect = collectJob;
const start = (speculative: SpeculativeOptions | null) => startTestEngine(engineOptions({ speculative }));

const plain = start(null);
const self = start({ mode: 'self', numDrafts: 4, mtpQuantization: 'bf16', mtpVocab: 0 });

test('self-speculative: greedy output identical to plain decoding, one at a time and all at once', async () => {
  const [a, b] = await Promise.all([plain, self]);
  assert.equal(b.info.drafter, 'self');
  assert.match(b.info.drafterDetail ?? '', /^skips layers \d(,\d)* of 6 /);
  console.log(`# drafter: ${b.info.drafterDetail}`);
  const alone: number[][] = [];
  for (const p of PROMPTS) {
    const want = (await collect(a.submit(job(p, 64)))).ids;
    assert.deepEqual((await collect(b.submit(job(p, 64)))).ids, want);
    alone.push(want);
  }
  const together = await Promise.all(PROMPTS.map((p) => collect(b.submit(job(p, 64)))));
  assert.deepEqual(
    together.map((r) => r.ids),
    alone,
  );
  const s = b.stats();
  console.log(`# drafted ${s.draftedTokens}, accepted ${s.acceptedDraftTokens} in ${s.verifySteps} verify steps`);
  assert.ok(s.acceptedDraftTokens > s.verifySteps, 'more than one accepted draft token per verify step on average');
  assert.ok(s.acceptedDraftTokens <= s.draftedTokens);
  assert.equal(s.kvBlocksUsed, 0, 'every block back in the pool (rejected drafts rolled back)');
});

test('self-speculative: max_tokens and stop tokens inside a draft end the output where plain decoding does', async () => {
  const [a, b] = await Promise.all([plain, self]);
  const reference = await collect(a.submit(job(PROMPTS[1], 64)));
  for (const max of [1, 2, 3, 5, 8, 13]) {
    const r = await collect(b.submit(job(PROMPTS[1], max)));
    assert.deepEqual(r.ids, reference.ids.slice(0, max), `max_tokens ${max}`);
    assert.equal(r.reason, 'length');
  }
  for (const at of [2, 6, 11]) {
    const stop = reference.ids[at];
    const stopped = job(PROMPTS[1], 64, { stopTokenIds: [stop, IM_END] });
    const r = await collect(b.submit(stopped));
    assert.deepEqual(r.ids, (await collect(a.submit(stopped))).ids, `stop token at ${at}`);
    assert.equal(r.ids.at(-1), stop);
    assert.equal(r.reason, 'stop');
  }
  assert.equal(b.stats().kvBlocksUsed, 0);
});

test('self-speculative: seeded sampling runs through speculative sampling to full length, reproducibly', async () => {
  const b = await self;
  const sampled = job(PROMPTS[2], 40, { sampling: { ...GREEDY, temperature: 0.8, seed: 7 }, stopTokenIds: [] });
  const x = await collect(b.submit(sampled));
  const y = await collect(b.submit(sampled));
  assert.equal(x.ids.length, 40);
  assert.deepEqual(y.ids, x.ids, 'same seed, same drafts, same tokens');
});
