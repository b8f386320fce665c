// Logits processors (src/engine/logits/): the thinking budget and the tool-call grammar, alone and
// when a step hands a sequence several tokens (accepted one by one, as the step loop does, then
// Scheduler.postprocess).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { GrammarError, VocabIndex } from '../../src/engine/grammar/index.js';
import { compileToolGrammar, toolGrammarConstraint } from '../helpers/tool-grammar.js';
import {
  acceptToken,
  forcedToken,
  GrammarProcessor,
  logitsProcessors,
  processLogits,
  ThinkingBudgetProcessor,
  type LogitsProcessor,
} from '../../src/engine/logits/index.js';
import { Scheduler } from '../../src/engine/scheduler.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import type { GenerationRequest, ThinkingBudget } from '../../src/engine/types.js';

const OPEN = 500;
const CLOSE = 501;
const FORCE = [600, CLOSE, 601]; // "\n", "</think>", "\n\n"
const budget = (maxTokens: number, startsInside = false): ThinkingBudget => ({
  maxTokens,
  startsInside,
  openTokenId: OPEN,
  closeTokenId: CLOSE,
  forceTokenIds: FORCE,
});

/** What the processor forces at each step while it is fed `tokens` (its forced ones included). */
function forcedAlong(p: LogitsProcessor, tokens: number[]): (number | null)[] {
  const out: (number | null)[] = [forcedToken([p])];
  for (const t of tokens) {
    p.accept(t);
    out.push(forcedToken([p]));
  }
  return out;
}

test('thinking budget: counts reasoning tokens, then forces the closing tokens one by one', () => {
  const p = new ThinkingBudgetProcessor(budget(3));
  assert.deepEqual(
    forcedAlong(p, [7, OPEN, 1, 2, 3, ...FORCE, 4, 5]),
    // Outside a think block nothing counts; the third reasoning token spends the budget.
    [null, null, null, null, null, FORCE[0], FORCE[1], FORCE[2], null, null, null],
  );
});

test('thinking budget: a prompt that leaves the block open counts from the start; a budget of 0 forces at once', () => {
  assert.deepEqual(forcedAlong(new ThinkingBudgetProcessor(budget(2, true)), [1, 2, ...FORCE]), [null, null, ...FORCE, null]);
  assert.deepEqual(forcedAlong(new ThinkingBudgetProcessor(budget(0, true)), [...FORCE, 9]), [...FORCE, null, null]);
  // Closed by the model itself before the budget: nothing is forced.
  assert.deepEqual(forcedAlong(new ThinkingBudgetProcessor(budget(2, true)), [1, CLOSE, 2, 3, 4]), [null, null, null, null, null, null]);
});

test('thinking budget: closing tokens without the close id are forced again while the block stays open', () => {
  const p = new ThinkingBudgetProcessor({ ...budget(1, true), forceTokenIds: [600, 601] });
  assert.deepEqual(forcedAlong(p, [1, 600, 601, 600]), [null, 600, 601, 600, 601]);
});

// The tool-call grammar on a vocabulary of single bytes (token id = byte), with 256 as the end token.
const byteVocab = new VocabIndex([...Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)), null]);
const END = 256;
const spec = {
  format: 'hermes',
  tools: [{ name: 'f', parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } }],
  endTokenIds: [END],
};
const grammar = compileToolGrammar(spec, byteVocab)!;
const constraint = toolGrammarConstraint(spec);
const bytes = (s: string) => [...new TextEncoder().encode(s)];
const WHITESPACE = bytes(' \t\r\n');
/** The token ids a fresh row keeps after the processors ran over it (whitespace, allowed almost anywhere, left out). */
function allowed(processors: LogitsProcessor[]): number[] {
  const row = new Float32Array(END + 1);
  processLogits(processors, row);
  return [...row.keys()].filter((id) => row[id] > -Infinity && !WHITESPACE.includes(id));
}

test('grammar processor: masks the row to what the grammar allows next, and follows accepted tokens', () => {
  const p = new GrammarProcessor(grammar, new Uint8Array(END + 1));
  assert.equal(forcedToken([p]), null);
  assert.deepEqual(allowed([p]), bytes('<'));
  for (const t of bytes('<tool_call>{"name": "')) p.accept(t);
  assert.deepEqual(allowed([p]), bytes('f'));
  assert.throws(() => p.accept(bytes('g')[0]), GrammarError);
});

function request(over: Partial<GenerationRequest>): GenerationRequest {
  return {
    promptTokens: [1, 2, 3],
    maxTokens: 100,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: [END],
    timeoutMs: 0,
    logprobs: 0,
    ...over,
  };
}

/** A sequence with the processors a job gets at admission, prefilled and ready to take tokens. */
function admitted(req: GenerationRequest): {
  s: Scheduler;
  seq: Sequence;
  take: (tokens: number[]) => ReturnType<Scheduler['postprocess']>;
} {
  const s = new Scheduler({ maxBatchSize: 1, maxPrefillTokens: 100 }, new BlockManager(16, 16));
  const seq = createSequence(1, req, Date.now());
  seq.processors = logitsProcessors(req, req.constraint ? grammar : null, () => new Uint8Array(END + 1));
  s.add(seq);
  // The step loop moves the processors past each token it takes, up to one that stops the sequence.
  const take = (tokens: number[]) => {
    for (const t of tokens) {
      acceptToken(seq.processors, t);
      if (seq.stopTokenIds.has(t)) break;
    }
    return s.postprocess(s.schedule(), [tokens]);
  };
  return { s, seq, take };
}

test('several tokens in one step: the grammar advances through each of them', () => {
  const { seq, take } = admitted(request({ constraint }));
  assert.deepEqual(take(bytes('<tool_call>{"name": "f", "arguments": {"n": ')), []);
  assert.deepEqual(allowed(seq.processors), bytes('-0123456789'));
  assert.deepEqual(take(bytes('12}}</tool_call>')), []);
  // The call is complete: whitespace or the end token only.
  assert.ok(allowed(seq.processors).includes(END));
  // The end token is also a stop token: it ends the sequence, and what follows is dropped.
  const finished = take([END, ...bytes('<tool_call>')]);
  assert.deepEqual(
    finished.map((f) => [f.reason, f.taken]),
    [['stop', 1]],
  );
  assert.equal(seq.tokens[seq.tokens.length - 1], END);
});

test('several tokens in one step: the thinking budget counts each, and forces the close once spent', () => {
  const { seq, take } = admitted(request({ thinkingBudget: budget(4, true) }));
  take([10, 11, 12]);
  assert.equal(forcedToken(seq.processors), null);
  take([13, 14, 15]); // the budget ran out at 13: the rest still count, and the close is due
  assert.equal(forcedToken(seq.processors), FORCE[0]);
  take(FORCE.slice(0, 2));
  assert.equal(forcedToken(seq.processors), FORCE[2]);
  take([FORCE[2], 16, 17]);
  assert.equal(forcedToken(seq.processors), null);
});

test('thinking budget: a token other than the forced one starts the closing tokens over', () => {
  const p = new ThinkingBudgetProcessor(budget(1, true));
  assert.deepEqual(forcedAlong(p, [1, FORCE[0], 2, FORCE[0], FORCE[1], FORCE[2]]), [null, FORCE[0], FORCE[1], ...FORCE, null]);
});

test('processors at admission: the thinking budget is asked first, then the grammar masks', () => {
  const { seq } = admitted(request({ thinkingBudget: budget(0, true), constraint }));
  assert.deepEqual(
    seq.processors.map((p) => p.constructor.name),
    ['ThinkingBudgetProcessor', 'GrammarProcessor'],
  );
  assert.equal(forcedToken(seq.processors), FORCE[0]);
  assert.deepEqual(
    logitsProcessors(request({}), null, () => new Uint8Array(1)),
    [],
  );
});
