// Multi-token prediction on a generated tiny Qwen3 checkpoint with an MTP layer (no public
// checkpoint of the families svc runs has one): the native paged MTP layer against the plain
// TypeScript reference forward, the drafter's proposals against reference drafting, the
// --mtp-vocab head, and the start-up checks.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { nativeOps } from '../../src/kernels/native.js';
import { referenceOps } from '../../src/kernels/reference.js';
import type { KvLayer, Ops } from '../../src/kernels/ops.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import { ModelRunner } from '../../src/engine/model-runner.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import type { ScheduledBatch } from '../../src/engine/scheduler.js';
import { MtpDrafter } from '../../src/engine/speculative/mtp-drafter.js';
import { mtpDraftVocab, planMtp } from '../../src/engine/speculative/mtp-setup.js';
import { createModel, createMtpLayer, findMtpWeights, type Model, type MtpLayer } from '../../src/model/architectures/index.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import type { Checkpoint } from '../../src/model/types.js';
import { writeMtpCheckpoint, type MtpCheckpointOptions } from '../helpers/mtp-checkpoint.js';
import { ReferenceMtp, type MtpReferenceRow } from '../helpers/mtp-reference.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function checkpointWith(opts: MtpCheckpointOptions): Checkpoint {
  const { dir } = writeMtpCheckpoint(opts);
  dirs.push(dir);
  return loadCheckpoint(dir, { fastLoad: true });
}

const BS = 4;
const PROMPT = Array.from({ length: 37 }, (_, i) => (i * 89 + 7) % 380);

/** A sequence holding every block it can need (interleaved, reversed: a non-contiguous table). */
function sequenceFor(prompt: number[], numBlocks: number, id = 1): Sequence {
  const seq = createSequence(
    id,
    {
      promptTokens: prompt,
      maxTokens: 64,
      sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
      stopTokenIds: [],
      timeoutMs: 0,
      logprobs: 0,
    },
    0,
  );
  for (let b = numBlocks - 1; b >= 0; b -= 2) seq.blockTable.push(b);
  for (let b = numBlocks - 2; b >= 0; b -= 2) seq.blockTable.push(b);
  seq.status = 'running';
  return seq;
}

function argmax(row: Float32Array, n = row.length): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** Max |a − b| over max |b|. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    err = Math.max(err, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return err / scale;
}

interface Rig {
  checkpoint: Checkpoint;
  model: Model;
  mtp: MtpLayer;
  kv: KvLayer[];
  mtpKv: KvLayer;
  runner: ModelRunner;
  drafter: MtpDrafter;
}

function rig(checkpoint: Checkpoint, ops: Ops, draftVocab = checkpoint.config.vocabSize, numBlocks = 32): Rig {
  const model = createModel(checkpoint, ops);
  const mtp = createMtpLayer(checkpoint, ops, draftVocab);
  const kv = allocateKvCache(checkpoint.config, numBlocks, BS, 'f32');
  const [mtpKv] = allocateKvCache({ ...checkpoint.config, numLayers: 1 }, numBlocks, BS, 'f32');
  return { checkpoint, model, mtp, kv, mtpKv, runner: new ModelRunner(model, kv, BS), drafter: new MtpDrafter(mtp, mtpKv, BS) };
}

/** Runs `seq`'s uncached tokens as one chunk, appends the greedy token, and lets the drafter observe. */
function prefill(r: Rig, seq: Sequence): Float32Array {
  const start = seq.numCached;
  const batch: ScheduledBatch = {
    chunks: [{ seq, start, length: seq.tokens.length - start, sample: true, room: 0, draft: [] }],
    numTokens: seq.tokens.length - start,
  };
  const forward = r.runner.prepare(batch);
  const logits = r.model.forward(forward, r.kv);
  const hidden = r.model.lastHidden().slice();
  seq.numCached = seq.tokens.length;
  seq.tokens.push(argmax(logits));
  r.drafter.observe({ batch, forward, hidden });
  return hidden;
}

/** Reference drafting: the MTP layer over rows 0..n-1, then recursively on its own output. */
function referenceDrafts(ref: ReferenceMtp, rows: MtpReferenceRow[], room: number, vocab: number): number[] {
  const drafts: number[] = [];
  const all = [...rows];
  for (let k = 0; k < room; k++) {
    const out = ref.run(all);
    const last = all.length - 1;
    const token = argmax(out.logits[last], vocab);
    drafts.push(token);
    all.push({ hidden: out.hidden[last], token });
  }
  return drafts;
}

test('findMtpWeights: the MTP layer, its dtypes, and why a checkpoint has none', () => {
  const withMtp = checkpointWith({ mtp: 'random' });
  assert.deepEqual(findMtpWeights(withMtp), { found: true, layer: 2, dtypes: ['bf16'] });
  assert.equal(withMtp.config.numMtpLayers, 1);
  const none = checkpointWith({ mtp: 'none' });
  assert.equal(none.config.numMtpLayers, undefined);
  assert.deepEqual(findMtpWeights(none), { found: false, reason: 'config.json sets no num_nextn_predict_layers' });
  // Configs often keep num_nextn_predict_layers where the MTP weights were stripped from the upload.
  const stripped = checkpointWith({ mtp: 'none', nextnConfig: true });
  assert.deepEqual(findMtpWeights(stripped), {
    found: false,
    reason: 'num_nextn_predict_layers is 1 but there is no tensor model.layers.2.eh_proj.weight',
  });
  // The main model loads and runs alike with or without the extra layer's tensors.
  const plain = createModel(none, referenceOps);
  const extra = createModel(checkpointWith({ mtp: 'random' }), referenceOps);
  const batch = { tokens: Int32Array.of(5, 6), positions: Int32Array.of(0, 1), slots: Int32Array.of(0, 1), logitRows: Int32Array.of(1) };
  const seqs = [{ qStart: 0, qLen: 2, kvLen: 2, blockTable: Int32Array.of(0) }];
  const a = plain.forward({ ...batch, seqs }, allocateKvCache(none.config, 1, BS, 'f32'));
  const b = extra.forward({ ...batch, seqs }, allocateKvCache(none.config, 1, BS, 'f32'));
  assert.deepEqual(a, b);
});

test('MTP layer: the native paged forward matches the TypeScript reference (bf16 weights, f32 KV)', () => {
  const checkpoint = checkpointWith({ mtp: 'random' });
  const ref = new ReferenceMtp(checkpoint);
  for (const ops of [referenceOps, nativeOps]) {
    const r = rig(checkpoint, ops);
    const seq = sequenceFor(PROMPT, 32);
    const hidden = prefill(r, seq);
    const H = checkpoint.config.hiddenSize;
    const n = PROMPT.length;
    // Rows 0..n-1: each position's main hidden state with the token after it (the last: the one just sampled).
    const rows = Array.from({ length: n }, (_, i) => ({ hidden: hidden.slice(i * H, (i + 1) * H), token: seq.tokens[i + 1] }));
    const expected = ref.run(rows);
    // The same rows through the engine's MTP layer, in two chunks (a prefill split across steps).
    const [mtpKv] = allocateKvCache({ ...checkpoint.config, numLayers: 1 }, 32, BS, 'f32');
    const got: Float32Array[] = [];
    const logits: Float32Array[] = [];
    for (const [start, end] of [
      [0, 20],
      [20, n],
    ]) {
      const m = end - start;
      const positions = Int32Array.from({ length: m }, (_, j) => start + j);
      const slots = positions.map((p) => seq.blockTable[Math.floor(p / BS)] * BS + (p % BS));
      const seqs = [{ qStart: 0, qLen: m, kvLen: end, blockTable: Int32Array.from(seq.blockTable) }];
      const tokens = Int32Array.from(rows.slice(start, end).map((x) => x.token));
      const out = r.mtp.forward({ tokens, positions, slots, seqs, hidden: hidden.slice(start * H, end * H) }, m, mtpKv);
      const l = r.mtp.logits(out, m);
      for (let j = 0; j < m; j++) {
        got.push(out.slice(j * H, (j + 1) * H));
        logits.push(l.slice(j * r.mtp.draftVocab, (j + 1) * r.mtp.draftVocab));
      }
    }
    // Tolerance: the reference sums in f64 over the same bf16 weights; the engine's activations are f32.
    const tol = 1e-4;
    for (let i = 0; i < n; i++) {
      assert.ok(relErr(got[i], expected.hidden[i]) < tol, `${ops.name} hidden row ${i}: ${relErr(got[i], expected.hidden[i])}`);
      assert.ok(relErr(logits[i], expected.logits[i]) < tol, `${ops.name} logits row ${i}: ${relErr(logits[i], expected.logits[i])}`);
      assert.equal(argmax(logits[i]), argmax(expected.logits[i]), `${ops.name} row ${i} argmax`);
    }
  }
});

test('MTP drafter: observe + propose give the reference drafts (recursive beyond the first)', () => {
  const checkpoint = checkpointWith({ mtp: 'random', seed: 3 });
  const ref = new ReferenceMtp(checkpoint);
  const r = rig(checkpoint, nativeOps);
  const H = checkpoint.config.hiddenSize;
  // Two sequences, one prefilled in two chunks, so the MTP KV is written across steps.
  const a = sequenceFor(PROMPT, 16, 1);
  const bPrompt = PROMPT.slice(0, 23).reverse();
  const b = sequenceFor(bPrompt, 16, 2);
  b.blockTable.forEach((_, i) => (b.blockTable[i] += 16));
  const hiddenA = prefill(r, a);
  // b: the first 12 tokens as a chunk that does not sample, then the rest.
  const batch: ScheduledBatch = { chunks: [{ seq: b, start: 0, length: 12, sample: false, room: 0, draft: [] }], numTokens: 12 };
  const forward = r.runner.prepare(batch);
  r.model.forward(forward, r.kv);
  const hiddenB0 = r.model.lastHidden().slice();
  b.numCached = 12;
  r.drafter.observe({ batch, forward, hidden: hiddenB0 });
  assert.deepEqual(r.drafter.propose([{ seq: b, room: 3 }]), [[]], 'no draft for a sequence still prefilling');
  const hiddenB1 = prefill(r, b);
  const hiddenB = new Float32Array([...hiddenB0, ...hiddenB1]);

  const rowsOf = (seq: Sequence, hidden: Float32Array) =>
    Array.from({ length: seq.numCached }, (_, i) => ({ hidden: hidden.slice(i * H, (i + 1) * H), token: seq.tokens[i + 1] }));
  const drafts = r.drafter.propose([
    { seq: a, room: 4 },
    { seq: b, room: 2 },
  ]);
  assert.deepEqual(drafts, [referenceDrafts(ref, rowsOf(a, hiddenA), 4, 384), referenceDrafts(ref, rowsOf(b, hiddenB), 2, 384)]);
  assert.deepEqual(r.drafter.propose([{ seq: a, room: 1 }]), [drafts[0].slice(0, 1)]);
  // Forgotten (preempted, finished): nothing until observe sees it again.
  r.drafter.forget(a.id);
  assert.deepEqual(r.drafter.propose([{ seq: a, room: 4 }]), [[]]);
});

test('--mtp-vocab: the draft head scores only the first N ids (clamped; 0 = all)', () => {
  assert.equal(mtpDraftVocab(100000, 384), 384);
  assert.equal(mtpDraftVocab(0, 384), 384);
  assert.equal(mtpDraftVocab(50, 384), 50);
  assert.throws(() => mtpDraftVocab(-1, 384), /--mtp-vocab/);
  const checkpoint = checkpointWith({ mtp: 'random', seed: 5 });
  const ref = new ReferenceMtp(checkpoint);
  const full = rig(checkpoint, nativeOps);
  const small = rig(checkpoint, nativeOps, 50);
  assert.equal(small.mtp.draftVocab, 50);
  const H = checkpoint.config.hiddenSize;
  const seqFull = sequenceFor(PROMPT, 32);
  const seqSmall = sequenceFor(PROMPT, 32);
  const hidden = prefill(full, seqFull);
  prefill(small, seqSmall);
  const rows = Array.from({ length: seqFull.numCached }, (_, i) => ({
    hidden: hidden.slice(i * H, (i + 1) * H),
    token: seqFull.tokens[i + 1],
  }));
  const draftsSmall = small.drafter.propose([{ seq: seqSmall, room: 3 }])[0];
  assert.deepEqual(draftsSmall, referenceDrafts(ref, rows, 3, 50));
  for (const t of draftsSmall) assert.ok(t < 50);
  assert.deepEqual(full.drafter.propose([{ seq: seqFull, room: 3 }])[0], referenceDrafts(ref, rows, 3, 384));
  // The smaller head is a matrix of its own: its logits rows are N long.
  const out = small.mtp.logits(new Float32Array(H).fill(0.5), 1);
  assert.equal(out.length, 50);
});

test('start-up checks: no MTP weights; --mtp-quantization against the checkpoint', () => {
  const mainKv = [{ k: 'bf16', v: 'bf16' } as const, { k: 'fp8', v: 'fp8' } as const];
  const none = checkpointWith({ mtp: 'none' });
  assert.throws(
    () => planMtp(none, { mtpQuantization: 'bf16', mtpVocab: 0 }, mainKv),
    /has no multi-token-prediction weights \(num_nextn_predict_layers in config\.json \/ model\.layers\.2\.eh_proj\.weight\): config\.json sets no num_nextn_predict_layers/,
  );
  const bf16 = checkpointWith({ mtp: 'random' });
  assert.throws(
    () => planMtp(bf16, { mtpQuantization: 'fp8', mtpVocab: 0 }, mainKv),
    /--mtp-quantization fp8 does not match the checkpoint's multi-token-prediction weights, stored as bf16/,
  );
  const f32 = checkpointWith({ mtp: 'random', mtpDtype: 'f32' });
  assert.throws(
    () => planMtp(f32, { mtpQuantization: 'bf16', mtpVocab: 0 }, mainKv),
    /--mtp-quantization bf16 does not match .* stored as f32/,
  );
  const plan = planMtp(bf16, { mtpQuantization: 'bf16', mtpVocab: 100 }, mainKv);
  // One more layer's K and V (the last main layer's dtypes: fp8, one byte per element).
  assert.deepEqual(plan, { kvBytesPerToken: 2 * 2 * 16, kvDtypes: { k: 'fp8', v: 'fp8' }, draftVocab: 100 });
});
