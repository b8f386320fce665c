// The self-speculative drafter's pieces: the forward pass with skipped layers (against the same
// model with those layers taken out of the checkpoint), the vocabulary-subset head, the hidden-state
// hook, the drafter on svc-tiny-chat (proposals, KV outside the draft positions untouched), the
// live-row draft head and the skip-set calibration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { KvLayer, Ops } from '../../src/kernels/ops.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import { createModel, type ForwardBatch, type Model } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import type { Checkpoint } from '../../src/model/types.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import { SelfDrafter } from '../../src/engine/speculative/self-drafter.js';
import { liveDraftHead } from '../../src/engine/speculative/draft-head.js';
import { bestCandidate, calibrateSkipSets, expectedSpeedup } from '../../src/engine/speculative/skip-calibration.js';
import { createSelfDrafter } from '../../src/engine/speculative/self-speculative.js';

const STORIES = resolve(MODELS, 'stories260k-gguf', 'stories260K.gguf');

/** The checkpoint with only layers `keep`, renumbered 0, 1, …: what a skipping forward must compute. */
function withLayers(ck: Checkpoint, keep: number[]): Checkpoint {
  const tensors = new Map<string, Checkpoint['tensors'] extends Map<string, infer T> ? T : never>();
  for (const [name, t] of ck.tensors) {
    const m = /^model\.layers\.(\d+)\.(.*)$/.exec(name);
    if (!m) tensors.set(name, t);
    else if (keep.includes(Number(m[1]))) tensors.set(`model.layers.${keep.indexOf(Number(m[1]))}.${m[2]}`, t);
  }
  return { ...ck, residency: undefined, tensors, config: { ...ck.config, numLayers: keep.length } };
}

/** One sequence in a fresh cache of `blocks` blocks of 4, its table in reverse order. */
function batchOf(tokens: number[], start: number, blockTable: Int32Array, allRows = true): ForwardBatch {
  const n = tokens.length;
  const positions = Int32Array.from({ length: n }, (_, i) => start + i);
  return {
    tokens: Int32Array.from(tokens),
    positions,
    slots: positions.map((p) => blockTable[Math.floor(p / 4)] * 4 + (p % 4)),
    seqs: [{ qStart: 0, qLen: n, kvLen: start + n, blockTable }],
    logitRows: allRows ? positions.map((_, i) => i) : Int32Array.of(n - 1),
  };
}

const bytesOf = (kv: KvLayer[]) => kv.map((l) => ({ k: l.k.slice(), v: l.v.slice() }));

for (const ops of [referenceOps, nativeOps] as Ops[]) {
  test(`skipping layers on ${ops.name} ops: logits and KV of the model with those layers removed; skipped layers' KV untouched`, () => {
    const ck = loadCheckpoint(STORIES, { fastLoad: false });
    const full = createModel(ck, ops);
    const L = full.config.numLayers;
    assert.equal(L, 5);
    for (const skip of [[1, 3], [0], [2, 3, 4]]) {
      const keep = [...Array(L).keys()].filter((l) => !skip.includes(l));
      const reduced = createModel(withLayers(ck, keep), ops);
      const table = Int32Array.from([3, 1, 2, 0]);
      const kvFull = allocateKvCache(full.config, 4, 4, 'f32');
      const kvReduced = allocateKvCache(reduced.config, 4, 4, 'f32');
      const prompt = [1, 403, 407, 261, 378, 9, 30, 88];
      const opts = { skipLayers: new Set(skip) };
      // A prefill, then a one-token step reading it back from the cache.
      assert.deepEqual(full.forward(batchOf(prompt, 0, table), kvFull, opts), reduced.forward(batchOf(prompt, 0, table), kvReduced));
      assert.deepEqual(full.forward(batchOf([42], 8, table), kvFull, opts), reduced.forward(batchOf([42], 8, table), kvReduced));
      keep.forEach((l, i) => {
        assert.deepEqual(kvFull[l].k, kvReduced[i].k, `layer ${l} keys`);
        assert.deepEqual(kvFull[l].v, kvReduced[i].v, `layer ${l} values`);
      });
      for (const l of skip) assert.ok(kvFull[l].k.every((b) => b === 0) && kvFull[l].v.every((b) => b === 0), `layer ${l} written`);
    }
  });
}

test('an empty skip set is the default forward bit for bit (svc-tiny-chat, native; stories260K, reference)', () => {
  for (const [path, ops] of [
    [TINY_CHAT, nativeOps],
    [STORIES, referenceOps],
  ] as const) {
    const model = createModel(loadCheckpoint(path, { fastLoad: true }), ops);
    const table = Int32Array.from([1, 0, 3, 2]);
    const kvA = allocateKvCache(model.config, 4, 4, 'bf16');
    const kvB = allocateKvCache(model.config, 4, 4, 'bf16');
    const prompt = [1, 17, 23, 5, 99, 310, 7];
    const a = model.forward(batchOf(prompt, 0, table), kvA);
    const b = model.forward(batchOf(prompt, 0, table), kvB, { skipLayers: new Set() });
    assert.deepEqual(a, b);
    assert.deepEqual(bytesOf(kvA), bytesOf(kvB));
    assert.deepEqual(
      model.forward(batchOf([9, 8], 7, table), kvA),
      model.forward(batchOf([9, 8], 7, table), kvB, { skipLayers: new Set() }),
    );
  }
});

test('onHidden sees the embedding and each layer that ran; the last is lastHidden()', () => {
  const model = createModel(loadCheckpoint(STORIES, { fastLoad: false }), referenceOps);
  const table = Int32Array.from([0, 1, 2, 3]);
  for (const skip of [new Set<number>(), new Set([1, 2])]) {
    const kv = allocateKvCache(model.config, 4, 4, 'f32');
    const seen: number[] = [];
    let last = new Float32Array(0);
    model.forward(batchOf([1, 5, 6], 0, table), kv, {
      skipLayers: skip,
      onHidden: (i, h) => {
        seen.push(i);
        assert.equal(h.length, 3 * model.config.hiddenSize);
        last = h.slice();
      },
    });
    assert.deepEqual(
      seen,
      [0, 1, 2, 3, 4, 5].filter((i) => i === 0 || !skip.has(i - 1)),
    );
    assert.deepEqual(last, model.lastHidden());
  }
});

test('an output head over a subset of the vocabulary gives those columns of the full logits (bf16 copies of the rows)', () => {
  const model = createModel(loadCheckpoint(STORIES, { fastLoad: false }), referenceOps);
  const ids = Int32Array.from([0, 3, 77, 100, 311, 511]);
  const head = model.outputHead(ids);
  assert.deepEqual(head.ids, ids);
  const table = Int32Array.from([0, 1]);
  const full = model.forward(batchOf([1, 5, 6], 0, table), allocateKvCache(model.config, 2, 4, 'f32'));
  const sub = model.forward(batchOf([1, 5, 6], 0, table), allocateKvCache(model.config, 2, 4, 'f32'), { head });
  assert.equal(sub.length, 3 * ids.length);
  const V = model.config.vocabSize;
  for (let r = 0; r < 3; r++) {
    ids.forEach((id, j) => {
      const want = full[r * V + id];
      assert.ok(Math.abs(sub[r * ids.length + j] - want) < 0.02 * Math.max(1, Math.abs(want)), `row ${r} id ${id}`);
    });
  }
});

// ---- the drafter on svc-tiny-chat ----------------------------------------------------------------

const IM_END = 151645;
let chatModel: Model | null = null;
const tinyChat = () => (chatModel ??= createModel(loadCheckpoint(TINY_CHAT, { fastLoad: true }), nativeOps));

/** A prompt prefilled into `kv` with its first token sampled (greedy): how a decode reaches the drafter. */
function decoding(model: Model, kv: KvLayer[], id: number, prompt: number[], blocks: number[], maxTokens = 50): Sequence {
  const seq = createSequence(
    id,
    {
      promptTokens: prompt,
      maxTokens,
      sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
      stopTokenIds: [IM_END],
      timeoutMs: 0,
      logprobs: 0,
    },
    0,
  );
  seq.blockTable.push(...blocks);
  const table = Int32Array.from(blocks);
  const n = prompt.length;
  const positions = Int32Array.from({ length: n }, (_, i) => i);
  const logits = model.forward(
    {
      tokens: Int32Array.from(prompt),
      positions,
      slots: positions.map((p) => table[Math.floor(p / 16)] * 16 + (p % 16)),
      seqs: [{ qStart: 0, qLen: n, kvLen: n, blockTable: table }],
      logitRows: Int32Array.of(n - 1),
    },
    kv,
  );
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  seq.tokens.push(best);
  seq.numCached = n;
  return seq;
}

// "<|im_start|>user\nWhat is 7 plus 5?<|im_end|>\n<|im_start|>assistant\n" and a longer one, as Qwen3 tokenizes them.
const PROMPT_A = [151644, 872, 198, 3838, 374, 220, 22, 5519, 220, 20, 30, 151645, 198, 151644, 77091, 198];
const PROMPT_B = [151644, 872, 198, 3838, 374, 279, 6722, 315, 9625, 30, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271];

test('self drafter on svc-tiny-chat: batched proposals, the same as alone; only kept layers at draft positions written', () => {
  const model = tinyChat();
  const kv = allocateKvCache(model.config, 12, 16, 'bf16');
  const a = decoding(model, kv, 1, PROMPT_A, [7, 2]);
  const b = decoding(model, kv, 2, PROMPT_B, [5, 9, 0]);
  const skip = new Set([2, 3]);
  const head = liveDraftHead(model);
  const drafter = new SelfDrafter(model, kv, 16, { skipLayers: () => skip, head, minConfidence: 0 });
  const before = bytesOf(kv);
  const [pa, pb] = drafter.propose([
    { seq: a, room: 4 },
    { seq: b, room: 3 },
  ]);
  assert.ok(pa.length >= 1 && pa.length <= 4 && pb.length >= 1 && pb.length <= 3, `proposals ${pa} / ${pb}`);
  assert.equal(pa.length, 4, 'no stop token in this draft: all its room');
  for (const t of [...pa, ...pb]) assert.ok(head!.ids.includes(t), `draft token ${t} from the live vocabulary`);
  assert.ok(drafter.passes === 4 && drafter.drafted === pa.length + pb.length);

  // Positions [numCached, numCached + drafts) of kept layers may change; nothing else.
  const draftSlots = new Set<number>();
  for (const [seq, p] of [
    [a, pa],
    [b, pb],
  ] as const)
    for (let pos = seq.numCached; pos < seq.numCached + p.length; pos++)
      draftSlots.add(seq.blockTable[Math.floor(pos / 16)] * 16 + (pos % 16));
  const rowBytes = model.config.numKvHeads * model.config.headDim * 2;
  kv.forEach((layer, l) => {
    for (const part of ['k', 'v'] as const) {
      const now = layer[part];
      const was = before[l][part];
      let changedInDraft = 0;
      for (let slot = 0; slot < now.length / rowBytes; slot++) {
        const same = now.subarray(slot * rowBytes, (slot + 1) * rowBytes).every((x, i) => x === was[slot * rowBytes + i]);
        if (!same) {
          assert.ok(!skip.has(l), `skipped layer ${l} ${part} written at slot ${slot}`);
          assert.ok(draftSlots.has(slot), `layer ${l} ${part} written at slot ${slot}, outside the draft positions`);
          changedInDraft++;
        }
      }
      if (!skip.has(l)) assert.equal(changedInDraft, draftSlots.size, `layer ${l} ${part}: every draft position written`);
    }
  });

  // The same drafts one sequence at a time (their draft positions are simply written again).
  assert.deepEqual(drafter.propose([{ seq: a, room: 4 }])[0], pa);
  assert.deepEqual(drafter.propose([{ seq: b, room: 3 }])[0], pb);
});

test('self drafter: room, max_tokens, stop tokens and the confidence cut-off end a draft early', () => {
  const model = tinyChat();
  const kv = allocateKvCache(model.config, 8, 16, 'bf16');
  const head = liveDraftHead(model);
  const skip = new Set([2]);
  const drafter = new SelfDrafter(model, kv, 16, { skipLayers: () => skip, head, minConfidence: 0 });
  const a = decoding(model, kv, 1, PROMPT_B, [0, 1, 2]);
  const free = drafter.propose([{ seq: a, room: 5 }])[0];
  assert.equal(free.length, 5);
  assert.deepEqual(drafter.propose([{ seq: a, room: 2 }])[0], free.slice(0, 2), 'room 2');
  assert.deepEqual(drafter.propose([{ seq: a, room: 0 }])[0], [], 'no room');
  // max_tokens 3 with one token out: a verify takes at most 2 more, so 1 draft token is all that can be used.
  const short = decoding(model, kv, 2, PROMPT_B, [3, 4, 5], 3);
  assert.deepEqual(drafter.propose([{ seq: short, room: 5 }])[0], free.slice(0, 1), 'max_tokens');
  // A stop token ends the draft with it.
  const stopAt = free[2];
  const stopping = decoding(model, kv, 3, PROMPT_B, [6, 7, 0]);
  (stopping.stopTokenIds as Set<number>).add(stopAt);
  assert.deepEqual(drafter.propose([{ seq: stopping, room: 5 }])[0], free.slice(0, free.indexOf(stopAt) + 1), 'stop token');
  // Confidence above 1 is never reached: one token each.
  const timid = new SelfDrafter(model, kv, 16, { skipLayers: () => skip, head, minConfidence: 1.01 });
  assert.deepEqual(timid.propose([{ seq: a, room: 5 }])[0], free.slice(0, 1), 'confidence cut-off');
});

test('draft head: svc-tiny-chat keeps its 2,190 trained rows; stories260K needs every row (no subset head)', () => {
  const head = liveDraftHead(tinyChat());
  assert.ok(head);
  assert.equal(head.ids.length, 2190);
  assert.ok(head.ids.includes(IM_END));
  assert.equal(liveDraftHead(createModel(loadCheckpoint(STORIES, { fastLoad: true }), nativeOps)), null);
});

test('skip-set calibration on svc-tiny-chat: cosine-ranked middle layers, agreement falling with more skipped, deterministic', () => {
  const model = tinyChat();
  const head = liveDraftHead(model);
  const cal = calibrateSkipSets(model, head);
  console.log(`# calibration: cosine ${cal.cosine.map((c) => c.toFixed(3)).join(' ')}; ${cal.ms.toFixed(0)} ms`);
  assert.equal(cal.cosine.length, 6);
  assert.deepEqual(
    cal.candidates.map((c) => c.skip.length),
    [1, 2, 3],
  );
  for (const c of cal.candidates) {
    console.log(
      `#   skip [${c.skip}]: agreement ${c.agreement.toFixed(2)}, cost ${c.cost.toFixed(3)}, ×${expectedSpeedup(c, 4).toFixed(2)} at K 4`,
    );
    assert.ok(!c.skip.includes(0) && !c.skip.includes(5), 'first and last layers kept');
    assert.ok(c.agreement > 0 && c.agreement <= 1);
    assert.ok(c.cost > 0 && c.cost < 0.2, 'the live head makes a draft pass a small share of a step');
  }
  // Each candidate extends the previous one by the next most redundant layer.
  for (let k = 1; k < cal.candidates.length; k++) assert.ok(cal.candidates[k - 1].skip.every((l) => cal.candidates[k].skip.includes(l)));
  assert.ok(cal.candidates[0].agreement >= cal.candidates[2].agreement);
  assert.deepEqual(calibrateSkipSets(model, head).candidates, cal.candidates, 'deterministic');
  assert.ok(cal.candidates.includes(bestCandidate(cal, 4)));
});

test('createSelfDrafter: a description for the start-up log naming the skip set', () => {
  const model = tinyChat();
  const { drafter, description } = createSelfDrafter(model, allocateKvCache(model.config, 4, 16, 'bf16'), 16, 4);
  assert.equal(drafter.mode, 'self');
  assert.match(
    description,
    /^skips layers [1-4](,[1-4])* of 6 \(expected ×\d+\.\d\d at 4 drafts\); .* draft head 2190 live rows of 151936; \d+ ms$/,
  );
});
