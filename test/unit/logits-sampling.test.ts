// The sampling-control logits processors (src/engine/logits/): logit_bias, presence / frequency
// penalties, repetition_penalty, min_tokens, bad_words — on hand-made rows, with the exact logits
// they leave, their state after accept, their order at admission, and n > 1 independence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  acceptToken,
  BadWordsProcessor,
  badWordsTokenIds,
  GrammarProcessor,
  LogitBiasProcessor,
  logitsProcessors,
  MinTokensProcessor,
  PresenceFrequencyPenaltyProcessor,
  processLogits,
  RepetitionPenaltyProcessor,
  type LogitsProcessor,
} from '../../src/engine/logits/index.js';
import type { ToolGrammar } from '../../src/engine/grammar/index.js';
import { argmax } from '../../src/engine/sampler.js';
import type { GenerationRequest } from '../../src/engine/types.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { TINY_CHAT } from '../helpers/paths.js';

/** The row after the processors ran over a copy of `logits`. */
function processed(processors: LogitsProcessor[], logits: number[]): number[] {
  const row = Float32Array.from(logits);
  processLogits(processors, row);
  return [...row];
}

/** Feeds tokens to every processor, as Scheduler.postprocess does. */
function feed(processors: LogitsProcessor[], tokens: number[]): void {
  for (const t of tokens) acceptToken(processors, t);
}

const ROW = [2, -1, 0.5, 4, 0, -3];

test('logit_bias: adds each bias to its token, every step; ids past the row are skipped; -Infinity stays', () => {
  const p = new LogitBiasProcessor({ ids: [0, 3, 5, 99], biases: [1.5, -100, 100, 7] });
  assert.deepEqual(processed([p], ROW), [3.5, -1, 0.5, -96, 0, 97]);
  feed([p], [5, 5, 0]); // no state
  assert.deepEqual(processed([p], ROW), [3.5, -1, 0.5, -96, 0, 97]);
  assert.deepEqual(processed([p], [-Infinity, 0, 0, 0, 0, 0]), [-Infinity, 0, 0, -100, 0, 100]);
  // +100 on a token makes it the greedy pick; -100 on the greedy pick moves it.
  assert.equal(argmax(Float32Array.from(processed([new LogitBiasProcessor({ ids: [5], biases: [100] })], ROW))), 5);
  assert.equal(argmax(Float32Array.from(processed([new LogitBiasProcessor({ ids: [3], biases: [-100] })], ROW))), 0);
});

test('presence / frequency penalties: over generated tokens only, presence once, frequency per occurrence', () => {
  const p = new PresenceFrequencyPenaltyProcessor(0.5, 0.25);
  assert.deepEqual(processed([p], ROW), ROW, 'nothing generated yet: unchanged');
  feed([p], [3, 3, 1, 3]);
  // 3: 4 - (0.5 + 0.25·3) = 2.75; 1: -1 - (0.5 + 0.25) = -1.75.
  assert.deepEqual(processed([p], ROW), [2, -1.75, 0.5, 2.75, 0, -3]);
  const negative = new PresenceFrequencyPenaltyProcessor(-1, 0);
  feed([negative], [2, 2]);
  assert.deepEqual(processed([negative], ROW), [2, -1, 1.5, 4, 0, -3], 'negative presence encourages repeats');
  const frequencyOnly = new PresenceFrequencyPenaltyProcessor(0, 2);
  feed([frequencyOnly], [0, 0, 0]);
  assert.deepEqual(processed([frequencyOnly], ROW), [-4, -1, 0.5, 4, 0, -3]);
});

test('repetition penalty: prompt and generated tokens, positive logits divided, negative multiplied, once per token', () => {
  const p = new RepetitionPenaltyProcessor(2, [0, 1, 1, 1]);
  assert.deepEqual(processed([p], ROW), [1, -2, 0.5, 4, 0, -3], 'the prompt counts from the start');
  feed([p], [3, 5, 3, 4]);
  assert.deepEqual(processed([p], ROW), [1, -2, 0.5, 2, 0, -6], 'zero stays zero');
  const encourage = new RepetitionPenaltyProcessor(0.5, [3, 1]);
  assert.deepEqual(processed([encourage], ROW), [2, -0.5, 0.5, 8, 0, -3]);
});

test('min_tokens: masks the stop tokens until that many tokens were generated', () => {
  const p = new MinTokensProcessor(2, [4, 5, 4]);
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, 4, -Infinity, -Infinity]);
  feed([p], [0]);
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, 4, -Infinity, -Infinity]);
  feed([p], [1]);
  assert.deepEqual(processed([p], ROW), ROW, 'two generated: the stop tokens are free');
});

test('min_tokens: leaves the row alone when masking would leave nothing to sample', () => {
  const p = new MinTokensProcessor(5, [2, 3]);
  const onlyStops = [-Infinity, -Infinity, 1, 3, -Infinity, -Infinity];
  assert.deepEqual(processed([p], onlyStops), onlyStops);
  // A grammar (masking after it) that allows only an end token here: not masked either.
  const endOnly = {
    start: () => null,
    allowedTokens: (_state: unknown, out: Uint8Array) => {
      out.fill(0);
      out[3] = 1;
    },
    advance: (state: unknown) => state,
  } as unknown as ToolGrammar;
  const grammar = new GrammarProcessor(endOnly, new Uint8Array(ROW.length));
  const withGrammar = new MinTokensProcessor(5, [2, 3], grammar);
  assert.deepEqual(processed([withGrammar, grammar], ROW), [-Infinity, -Infinity, -Infinity, 4, -Infinity, -Infinity]);
  // When the grammar allows an ordinary token too, the end tokens are masked.
  const endOrFive = { ...endOnly, allowedTokens: (_s: unknown, out: Uint8Array) => out.set([0, 0, 0, 1, 0, 1]) } as unknown as ToolGrammar;
  const grammar2 = new GrammarProcessor(endOrFive, new Uint8Array(ROW.length));
  assert.deepEqual(processed([new MinTokensProcessor(5, [2, 3], grammar2), grammar2], ROW), [
    -Infinity,
    -Infinity,
    -Infinity,
    -Infinity,
    -Infinity,
    -3,
  ]);
});

test('bad_words: bans a word’s last token where the generated tokens end with the rest of it', () => {
  const p = new BadWordsProcessor([[1, 2, 3], [4], [5, 0]]);
  // One-token words are banned from the start; longer ones need their prefix generated.
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, 4, -Infinity, -3]);
  feed([p], [1]);
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, 4, -Infinity, -3]);
  feed([p], [2]);
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, -Infinity, -Infinity, -3], '1 2 → 3 banned');
  feed([p], [5]);
  assert.deepEqual(processed([p], ROW), [-Infinity, -1, 0.5, 4, -Infinity, -3], '… 5 → 0 banned, 3 free again');
  feed([p], [1, 1, 2]);
  assert.deepEqual(processed([p], ROW), [2, -1, 0.5, -Infinity, -Infinity, -3], 'the ring buffer wraps');
  // Prompt tokens do not count: a fresh processor has seen nothing.
  assert.deepEqual(processed([new BadWordsProcessor([[1, 2, 3]])], ROW), ROW);
});

test('bad_words: tokenized as vLLM does, bare and with a leading space when that is another token', () => {
  const tok = loadTokenizer(TINY_CHAT);
  const ids = badWordsTokenIds(tok, ['Paris', '  Hello world', '']);
  assert.deepEqual(ids, [[59604], [12095], [9707, 1879], [21927, 1879]]);
  // A word whose spaced form has a different length is kept bare only.
  const fake = { encode: (s: string) => (s.startsWith(' ') ? [9, 9, 9] : [1, 2]) };
  assert.deepEqual(badWordsTokenIds(fake, ['x']), [[1, 2]]);
});

// ---------------------------------------------------------------------------------------------
// At admission

function request(over: Partial<GenerationRequest>): GenerationRequest {
  return {
    promptTokens: [0, 1],
    maxTokens: 100,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: [5],
    timeoutMs: 0,
    logprobs: 0,
    ...over,
  };
}

const EVERYTHING: Partial<GenerationRequest> = {
  thinkingBudget: { maxTokens: 10, startsInside: false, openTokenId: 90, closeTokenId: 91, forceTokenIds: [91] },
  repetitionPenalty: 2,
  presencePenalty: 0.5,
  frequencyPenalty: 0.25,
  logitBias: { ids: [2], biases: [3] },
  minTokens: 3,
  badWords: [[4]],
};

test('processors at admission: budget, penalties, bias, then the masks, the grammar last; off values add nothing', () => {
  const fakeGrammar = {
    start: () => null,
    allowedTokens: (_s: unknown, out: Uint8Array) => out.fill(1),
    advance: (s: unknown) => s,
  } as unknown as ToolGrammar;
  const ps = logitsProcessors(request(EVERYTHING), fakeGrammar, () => new Uint8Array(ROW.length));
  assert.deepEqual(
    ps.map((p) => p.constructor.name),
    [
      'ThinkingBudgetProcessor',
      'RepetitionPenaltyProcessor',
      'PresenceFrequencyPenaltyProcessor',
      'LogitBiasProcessor',
      'MinTokensProcessor',
      'BadWordsProcessor',
      'GrammarProcessor',
    ],
  );
  // Repetition (prompt 0, 1) then bias on 2, min_tokens masks 5, bad word 4.
  assert.deepEqual(processed(ps, ROW), [1, -2, 3.5, 4, -Infinity, -Infinity]);
  feed(ps, [2]);
  // 2 was generated: 0.5 / 2 (repetition) − (0.5 + 0.25) (presence, frequency) + 3 (bias) = 2.5.
  assert.deepEqual(processed(ps, ROW), [1, -2, 2.5, 4, -Infinity, -Infinity]);
  const off = {
    repetitionPenalty: 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    logitBias: { ids: [], biases: [] },
    minTokens: 0,
    badWords: [],
  };
  assert.deepEqual(
    logitsProcessors(request(off), null, () => new Uint8Array(1)),
    [],
  );
  // min_tokens with no stop token to hold back (ignore_eos, no stop_token_ids): nothing to do.
  assert.deepEqual(
    logitsProcessors(request({ minTokens: 4, stopTokenIds: [] }), null, () => new Uint8Array(1)),
    [],
  );
});

test('n > 1: each job gets its own processors; one sequence’s tokens never reach another’s state', () => {
  const req = request(EVERYTHING);
  const a = logitsProcessors(req, null, () => new Uint8Array(1));
  const b = logitsProcessors(req, null, () => new Uint8Array(1));
  for (let i = 0; i < a.length; i++) assert.notEqual(a[i], b[i]);
  const before = processed(b, ROW);
  feed(a, [3, 3, 3, 4, 1]);
  assert.deepEqual(processed(b, ROW), before, 'b is untouched by what a took');
  assert.notDeepEqual(processed(a, ROW), before);
  // a has generated 5 tokens: its min_tokens mask is off; b's is still on.
  assert.ok(processed(a, ROW)[5] > -Infinity);
  assert.equal(processed(b, ROW)[5], -Infinity);
});
