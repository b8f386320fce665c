// Mixture-of-experts architectures (Mixtral, Qwen3-MoE) against Hugging Face: the tiny fixtures'
// logits through the paged cache (prefill and token-by-token decode) on both kernel sets; the
// transformers 5 fused-expert fixture's every intermediate (router logits, selected experts,
// routing weights, MoE output, block outputs, final logits) at its own tolerances; expert-parallel
// shards (loadExpertShard, a head built with a shard and RemoteExperts) against the whole model;
// GGUF round trips (llama.cpp names, stacked *_exps tensors, F32 and Q8_0); config parsing and
// the Library's inspection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FIXTURES, MODELS } from '../helpers/paths.js';
import { maxDifference, pagedLogits, readReferenceLogits, referenceErrors, PagedRun } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { MoeExperts, Ops } from '../../src/kernels/ops.js';
import { dequantize, WEIGHT_DTYPES, type DType } from '../../src/kernels/dtypes.js';
import { quantizeRowQ8_0 } from '../../src/kernels/dequant.js';
import {
  createModel,
  expertRange,
  loadExpertShard,
  type ExpertShard,
  type Model,
  type RemoteExperts,
} from '../../src/model/architectures/index.js';
import { loadMoeBlock, MoeScratch, routeTopK } from '../../src/model/architectures/moe.js';
import { CheckpointWeights } from '../../src/model/architectures/weights.js';
import { hfNameOf, loadCheckpoint, loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import { writeGguf, typed, type GgufMetadataValue, type GgufTensorInput } from '../../src/model/loaders/gguf-writer.js';
import { configFromGguf, configFromHf } from '../../src/model/model-config.js';
import { inspectModel } from '../../src/model/model-inspect.js';
import { findModelToml } from '../../src/model/model-toml.js';
import type { Checkpoint, Tensor } from '../../src/model/types.js';

const FUSED = resolve(MODELS, 'tiny-qwen3-moe-fixture');

function loadFixture(name: string): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(FIXTURES, `tiny_${name}.safetensors`)],
    configPath: resolve(FIXTURES, `tiny_${name}_config.json`),
    fastLoad: true,
  });
}

function loadFused(): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [resolve(FUSED, 'weights.safetensors')],
    configPath: resolve(FUSED, 'config.json'),
    fastLoad: true,
  });
}

const fixtureLogits = (name: string) => readReferenceLogits(resolve(FIXTURES, `tiny_${name}_logits.json`));

function withTempDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'svc-moe-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- config ------------------------------------------------------------------------------------

test('MoE configs: experts, per-token count, expert width, renormalisation and MoE layers from config.json', () => {
  const mixtral = loadFixture('mixtral').config;
  assert.deepEqual(
    [
      mixtral.architecture,
      mixtral.numExperts,
      mixtral.numExpertsPerTok,
      mixtral.moeIntermediateSize,
      mixtral.normTopkProb,
      mixtral.moeLayers,
    ],
    ['mixtral', 4, 2, 12, true, [true, true]],
  );
  const qwen = loadFixture('qwen3_moe').config;
  assert.deepEqual(
    [
      qwen.architecture,
      qwen.numExperts,
      qwen.numExpertsPerTok,
      qwen.moeIntermediateSize,
      qwen.intermediateSize,
      qwen.normTopkProb,
      qwen.moeLayers,
    ],
    ['qwen3_moe', 4, 2, 5, 12, true, [true, true]],
  );
  // decoder_sparse_step 2: layer i is MoE iff (i + 1) % 2 == 0.
  assert.deepEqual(loadFixture('qwen3_moe_mixed').config.moeLayers, [false, true, false]);
  assert.equal(loadFixture('qwen3_moe_window').config.slidingWindow, 3);
  // transformers 5: "architectures": null, num_local_experts, norm_topk_prob false, rope_parameters.
  const fused = loadFused().config;
  assert.deepEqual(
    [fused.architecture, fused.numExperts, fused.numExpertsPerTok, fused.moeIntermediateSize, fused.normTopkProb, fused.ropeTheta],
    ['qwen3_moe', 4, 2, 24, false, 10000],
  );
  const raw = JSON.parse(readFileSync(resolve(FIXTURES, 'tiny_qwen3_moe_config.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(configFromHf({ ...raw, num_hidden_layers: 4, decoder_sparse_step: 1, mlp_only_layers: [0, 3] }).moeLayers, [
    false,
    true,
    true,
    false,
  ]);
  // transformers' Qwen3MoeConfig defaults norm_topk_prob to false.
  const { norm_topk_prob: _drop, ...noNorm } = raw;
  assert.equal(configFromHf(noNorm).normTopkProb, false);
  assert.throws(() => configFromHf({ ...raw, num_experts_per_tok: 5 }), /num_experts_per_tok 5/);
  assert.throws(() => configFromHf({ ...raw, decoder_sparse_step: 0 }), /decoder_sparse_step/);
  // Dense configs carry none of the MoE fields.
  assert.equal(
    loadSafetensorsCheckpoint({
      files: [resolve(FIXTURES, 'tiny_qwen3.safetensors')],
      configPath: resolve(FIXTURES, 'tiny_qwen3_config.json'),
      fastLoad: true,
    }).config.numExperts,
    undefined,
  );
});

test('MoE configs from GGUF metadata: qwen3moe, and llama with expert_count as Mixtral', () => {
  const base = (arch: string): Record<string, unknown> => ({
    'general.architecture': arch,
    [`${arch}.embedding_length`]: 64,
    [`${arch}.block_count`]: 3,
    [`${arch}.feed_forward_length`]: 128,
    [`${arch}.attention.head_count`]: 4,
    [`${arch}.attention.head_count_kv`]: 2,
    [`${arch}.context_length`]: 4096,
    'tokenizer.ggml.tokens': ['a', 'b', 'c'],
  });
  const q = configFromGguf(
    { ...base('qwen3moe'), 'qwen3moe.expert_count': 8, 'qwen3moe.expert_used_count': 2, 'qwen3moe.expert_feed_forward_length': 32 },
    { hasOutputWeight: true, routerLayers: new Set([0, 2]) },
  );
  assert.deepEqual(
    [q.architecture, q.numExperts, q.numExpertsPerTok, q.moeIntermediateSize, q.intermediateSize, q.normTopkProb, q.moeLayers],
    ['qwen3_moe', 8, 2, 32, 128, true, [true, false, true]],
  );
  const m = configFromGguf({ ...base('llama'), 'llama.expert_count': 8, 'llama.expert_used_count': 2 }, { hasOutputWeight: true });
  assert.deepEqual(
    [m.architecture, m.numExperts, m.moeIntermediateSize, m.normTopkProb, m.moeLayers],
    ['mixtral', 8, 128, true, [true, true, true]],
  );
  const noNorm = configFromGguf(
    { ...base('llama'), 'llama.expert_count': 8, 'llama.expert_used_count': 2, 'llama.expert_weights_norm': false },
    { hasOutputWeight: true },
  );
  assert.equal(noNorm.normTopkProb, false);
  // A dense llama stays Llama, with no MoE fields.
  const dense = configFromGguf(base('llama'), { hasOutputWeight: true });
  assert.deepEqual([dense.architecture, dense.numExperts], ['llama', undefined]);
  assert.throws(
    () => configFromGguf({ ...base('llama'), 'llama.expert_count': 8 }, { hasOutputWeight: true }),
    /missing llama\.expert_used_count/,
  );
});

test('GGUF tensor names: router, stacked experts, and older per-expert Mixtral tensors', () => {
  assert.equal(hfNameOf('blk.3.ffn_gate_inp.weight'), 'model.layers.3.mlp.gate.weight');
  assert.equal(hfNameOf('blk.3.ffn_gate_exps.weight'), 'model.layers.3.mlp.experts.gate_proj');
  assert.equal(hfNameOf('blk.3.ffn_up_exps.weight'), 'model.layers.3.mlp.experts.up_proj');
  assert.equal(hfNameOf('blk.3.ffn_down_exps.weight'), 'model.layers.3.mlp.experts.down_proj');
  assert.equal(hfNameOf('blk.3.ffn_gate.7.weight'), 'model.layers.3.mlp.experts.7.gate_proj.weight');
  assert.equal(hfNameOf('blk.3.ffn_down.7.weight'), 'model.layers.3.mlp.experts.7.down_proj.weight');
  assert.equal(hfNameOf('blk.3.ffn_gate.weight'), 'model.layers.3.mlp.gate_proj.weight');
});

// ---- routing -----------------------------------------------------------------------------------

test('routing: softmax top-k, ties to the lower expert id (as torch.topk), renormalised or not', () => {
  const logits = Float32Array.from([0.5, 2, 2, -1, 2, 0.5]);
  const ids = new Int32Array(3);
  const weights = new Float32Array(3);
  routeTopK(logits, 1, 6, 3, false, ids, weights);
  assert.deepEqual(Array.from(ids), [1, 2, 4]);
  const z = 3 * Math.exp(2) + 2 * Math.exp(0.5) + Math.exp(-1);
  for (const w of weights) assert.ok(Math.abs(w - Math.exp(2) / z) < 1e-7);
  routeTopK(logits, 1, 6, 2, true, ids, weights);
  assert.deepEqual(Array.from(ids.subarray(0, 2)), [1, 2]);
  assert.deepEqual(Array.from(weights.subarray(0, 2)), [0.5, 0.5]);
  // Two rows, the second with the 0.5s tied after the 2: lower id first.
  const two = Float32Array.from([3, 1, 0, 0.5, 0.5, 2]);
  const ids2 = new Int32Array(4);
  routeTopK(two, 2, 3, 2, false, ids2, new Float32Array(4));
  assert.deepEqual(Array.from(ids2), [0, 1, 2, 0]);
});

// ---- the tiny fixtures' logits -----------------------------------------------------------------

const FIXTURE_CASES = [
  { name: 'mixtral', label: 'mixtral (4 experts, top-2, renormalised)' },
  { name: 'qwen3_moe', label: 'qwen3_moe (4 experts, top-2, norm_topk_prob)' },
  { name: 'qwen3_moe_mixed', label: 'qwen3_moe mixed (decoder_sparse_step 2: dense, MoE, dense)' },
  { name: 'qwen3_moe_window', label: 'qwen3_moe sliding window 3' },
];

// Reference ops: 1e-5 (HF computed in float64; ours stores f32 activations). Native: 1e-4 (f32 sums in another order).
for (const ops of [referenceOps, nativeOps]) {
  const tol = ops === referenceOps ? 1e-5 : 1e-4;
  for (const c of FIXTURE_CASES) {
    test(`${c.label} on ${ops.name} ops: prefill and paged decode match HF logits within ${tol}`, () => {
      const model = createModel(loadFixture(c.name), ops);
      const { prefill, decode } = referenceErrors(model, fixtureLogits(c.name));
      console.log(`# ${c.label} (${ops.name}): max abs logit error prefill ${prefill.toExponential(2)}, decode ${decode.toExponential(2)}`);
      assert.ok(prefill < tol, `prefill error ${prefill}`);
      assert.ok(decode < tol, `decode error ${decode}`);
    });
  }
}

test('the fixtures exercise the MoE options: without top-k renormalisation or the window the logits no longer match', () => {
  const ref = fixtureLogits('qwen3_moe');
  const flipped = loadFixture('qwen3_moe');
  flipped.config.normTopkProb = false;
  assert.ok(referenceErrors(createModel(flipped, referenceOps), ref).prefill > 1e-3, 'qwen3_moe without renormalisation');
  const noWindow = loadFixture('qwen3_moe_window');
  noWindow.config.slidingWindow = null;
  assert.ok(referenceErrors(createModel(noWindow, referenceOps), fixtureLogits('qwen3_moe_window')).prefill > 1e-3, 'without the window');
});

// ---- the fused-expert fixture's intermediates ---------------------------------------------------

interface RawTensor {
  shape: number[];
  values: number[];
}

/** Every tensor of a safetensors file as numbers (F32 and I64: the fixture's activations and expert ids). */
function readActivations(path: string): Map<string, RawTensor> {
  const bytes = readFileSync(path);
  const len = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + len).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const out = new Map<string, RawTensor>();
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const data = bytes.subarray(8 + len + e.data_offsets[0], 8 + len + e.data_offsets[1]);
    const copy = new Uint8Array(data).buffer;
    const values = e.dtype === 'F32' ? Array.from(new Float32Array(copy)) : Array.from(new BigInt64Array(copy), Number);
    out.set(name, { shape: e.shape, values });
  }
  return out;
}

const activations = readActivations(resolve(FUSED, 'checkpoints.safetensors'));
const fusedTolerances = JSON.parse(readFileSync(resolve(FUSED, 'tolerances.json'), 'utf8')) as {
  floating_point: Record<string, { absolute: number; relative: number }>;
};

/** The worst of |ours − ref| − (absolute + relative·|ref|) (torch.allclose passes when ≤ 0), and the max abs error. */
function closeness(
  ours: ArrayLike<number>,
  ref: number[],
  tol: { absolute: number; relative: number },
): { excess: number; maxErr: number } {
  assert.equal(ours.length, ref.length);
  let excess = -Infinity;
  let maxErr = 0;
  for (let i = 0; i < ref.length; i++) {
    const err = Math.abs(ours[i] - ref[i]);
    maxErr = Math.max(maxErr, err);
    excess = Math.max(excess, err - (tol.absolute + tol.relative * Math.abs(ref[i])));
  }
  return { excess, maxErr };
}

function fusedTolerance(name: string, ops: Ops): { absolute: number; relative: number } {
  const fp = fusedTolerances.floating_point;
  const own = fp[name.replace(/^layer_\d+\./, '')] ?? fp.default;
  // Native: f32 dot products in SIMD order; stated looser bound.
  return ops === referenceOps ? own : { absolute: 1e-5, relative: 1e-4 };
}

function expectClose(label: string, ops: Ops, name: string, ours: ArrayLike<number>): void {
  const tol = fusedTolerance(name, ops);
  const ref = activations.get(name);
  assert.ok(ref, `no activation ${name}`);
  const { excess, maxErr } = closeness(ours, ref.values, tol);
  console.log(
    `# fused fixture ${label} (${ops.name}): ${name} max abs error ${maxErr.toExponential(2)} (atol ${tol.absolute}, rtol ${tol.relative})`,
  );
  assert.ok(excess <= 0, `${name}: over tolerance by ${excess}`);
}

for (const ops of [referenceOps, nativeOps]) {
  test(`fused-expert Qwen3-MoE fixture on ${ops.name} ops: router logits, selected experts (exact), routing weights, MoE output, block outputs, final logits`, () => {
    const checkpoint = loadFused();
    const c = checkpoint.config;
    const input = activations.get('input_ids')!.values;
    const n = input.length;
    const w = new CheckpointWeights(checkpoint, ops);
    for (let l = 0; l < c.numLayers; l++) {
      // The block on HF's own input to it: the post-attention-normed hidden states.
      const block = loadMoeBlock(w, c, l, `model.layers.${l}.`);
      const scratch = new MoeScratch(c.numExperts!, c.numExpertsPerTok!);
      scratch.ensure(n);
      const out = new Float32Array(n * c.hiddenSize);
      block.run(ops, Float32Array.from(activations.get(`layer_${l}.post_attention_norm`)!.values), n, out, scratch);
      expectClose('MoE block', ops, `layer_${l}.router_logits`, scratch.logits.subarray(0, n * c.numExperts!));
      assert.deepEqual(
        Array.from(scratch.ids.subarray(0, n * c.numExpertsPerTok!)),
        activations.get(`layer_${l}.selected_experts`)!.values,
        `layer ${l} selected experts`,
      );
      expectClose('MoE block', ops, `layer_${l}.routing_weights`, scratch.weights.subarray(0, n * c.numExpertsPerTok!));
      expectClose('MoE block', ops, `layer_${l}.moe_output`, out);
    }
    // The whole model through the paged cache: each layer's output, and the logits, by prefill and by decode.
    const model = createModel(checkpoint, ops);
    const hidden = new Map<number, Float32Array>();
    const logits = new PagedRun(model, [n], 4).step([{ seq: 0, tokens: input }], true, { onHidden: (i, h) => hidden.set(i, h.slice()) });
    expectClose('forward', ops, 'hidden_state_0', hidden.get(0)!);
    for (let l = 0; l < c.numLayers; l++) expectClose('forward', ops, `layer_${l}.block_output`, hidden.get(l + 1)!);
    expectClose('prefill', ops, 'final_logits', logits);
    const decoded = pagedLogits(model, [input], 'decode')[0];
    const joined = new Float32Array(n * c.vocabSize);
    decoded.forEach((row, i) => joined.set(row, i * c.vocabSize));
    expectClose('decode', ops, 'final_logits', joined);
  });
}

// The fixture's MoE outputs are small (max |y| 9e-4: random init at std 0.02) and silu(g)·u ≈ g·u/2
// ≈ silu(u)·g for inputs that small, so swapped halves land within its 1e-6 absolute tolerance;
// measured against the output's own scale, only the gate-first order matches (1.6e-7 of it against 1.4e-2).
test('fused gate_up_proj: gate rows come first (swapping the halves misses the MoE output by far more than the right order)', () => {
  const checkpoint = loadFused();
  const c = checkpoint.config;
  const block = loadMoeBlock(new CheckpointWeights(checkpoint, referenceOps), c, 0, 'model.layers.0.');
  const n = 4;
  const x = Float32Array.from(activations.get('layer_0.post_attention_norm')!.values);
  const ref = activations.get('layer_0.moe_output')!.values;
  const scale = Math.max(...ref.map(Math.abs));
  const scratch = new MoeScratch(c.numExperts!, c.numExpertsPerTok!);
  scratch.ensure(n);
  const out = new Float32Array(n * c.hiddenSize);
  block.run(referenceOps, x, n, out, scratch);
  const right = closeness(out, ref, fusedTolerance('moe_output', referenceOps)).maxErr;
  const swapped: MoeExperts = { gate: block.experts.up, up: block.experts.gate, down: block.experts.down };
  referenceOps.moe(x, n, swapped, scratch.ids, scratch.weights, c.numExpertsPerTok!, out);
  const wrong = closeness(out, ref, fusedTolerance('moe_output', referenceOps)).maxErr;
  console.log(
    `# fused fixture moe_output (max |y| ${scale.toExponential(2)}): error ${right.toExponential(2)} gate first, ${wrong.toExponential(2)} swapped`,
  );
  assert.ok(right < 1e-4 * scale, `gate-first error ${right}`);
  assert.ok(wrong > 1e-3 * scale && wrong > 1000 * right, `swapped halves match as well (${wrong})`);
});

// ---- expert parallelism ------------------------------------------------------------------------

/**
 * The other ranks, in this process: each holds its shard as its worker would load it
 * (loadExpertShard) and runs the rows the head sends it with ops.moe.
 */
class InProcessRanks implements RemoteExperts {
  readonly layersStarted: number[] = [];
  private pending: { layer: number; x: Float32Array; ids: Int32Array; weights: Float32Array; k: number } | null = null;
  private partial = new Float32Array(0);

  constructor(
    private readonly ops: Ops,
    /** Per other rank, per layer: its experts (null: a dense layer). */
    private readonly shards: (MoeExperts | null)[][],
    private readonly hidden: number,
  ) {}

  start(layer: number, x: Float32Array, n: number, ids: Int32Array, weights: Float32Array, k: number): void {
    assert.equal(this.pending, null, 'start twice without finish');
    this.layersStarted.push(layer);
    // What goes over the wire: copies of the step's rows and their routes.
    this.pending = { layer, x: x.slice(0, n * this.hidden), ids: ids.slice(0, n * k), weights: weights.slice(0, n * k), k };
  }

  finish(out: Float32Array, n: number): void {
    const p = this.pending;
    assert.ok(p, 'finish without start');
    this.pending = null;
    if (this.partial.length < n * this.hidden) this.partial = new Float32Array(n * this.hidden);
    for (const shard of this.shards) {
      const experts = shard[p.layer];
      assert.ok(experts, `layer ${p.layer} is not a MoE layer`);
      if (!experts.gate.some((g) => g !== null)) continue;
      this.ops.moe(p.x, n, experts, p.ids, p.weights, p.k, this.partial);
      for (let i = 0; i < n * this.hidden; i++) out[i] += this.partial[i];
    }
  }
}

/** A copy of `checkpoint` whose experts outside `shard`'s share are NaN: a rank that read one would poison its output. */
function poisonOthers(checkpoint: Checkpoint, shard: ExpertShard): Checkpoint {
  const [first, end] = expertRange(checkpoint.config.numExperts!, shard);
  const nan = (bytes: number) => new Uint8Array(new Float32Array(bytes / 4).fill(NaN).buffer);
  const tensors = new Map<string, Tensor>();
  for (const [name, t] of checkpoint.tensors) {
    const own = /\.experts\.(\d+)\./.exec(name);
    const stacked = /\.experts\.(gate_up_proj|gate_proj|up_proj|down_proj)(\.weight)?$/.test(name);
    assert.ok(!(own || stacked) || t.dtype === 'f32', `${name}: poisoning is for f32 tensors`);
    if (own && (Number(own[1]) < first || Number(own[1]) >= end)) tensors.set(name, { ...t, data: nan(t.data.length) });
    else if (stacked) {
      const block = t.data.length / t.shape[0];
      const data = nan(t.data.length);
      data.set(t.data.subarray(first * block, end * block), first * block);
      tensors.set(name, { ...t, data });
    } else tensors.set(name, t);
  }
  return { ...checkpoint, tensors };
}

for (const [name, load] of [
  ['mixtral', () => loadFixture('mixtral')],
  ['qwen3_moe_mixed', () => loadFixture('qwen3_moe_mixed')],
  ['fused qwen3_moe', loadFused],
] as const) {
  for (const ops of [referenceOps, nativeOps]) {
    test(`${name} on ${ops.name} ops: a head holding its shard plus the other ranks' shards (2, 3 and 4 ranks) gives the whole model's logits`, () => {
      const checkpoint = load();
      const c = checkpoint.config;
      const sequences = [
        [1, 5, 7, 2, 3, 3, 0, 4, 6],
        [2, 2, 9, 1],
      ];
      const whole = createModel(checkpoint, ops);
      const wholePrefill = pagedLogits(whole, sequences, 'prefill');
      const wholeDecode = pagedLogits(whole, sequences, 'decode');
      for (const worldSize of [2, 3, 4]) {
        const shardOf = (rank: number): ExpertShard => ({ rank, worldSize });
        // Every rank reads its own experts only: the others' are NaN in the copy it loads from.
        const others = Array.from({ length: worldSize - 1 }, (_, i) =>
          loadExpertShard(poisonOthers(checkpoint, shardOf(i + 1)), ops, shardOf(i + 1)),
        );
        for (const [r, shard] of others.entries()) {
          const [first, end] = expertRange(c.numExperts!, shardOf(r + 1));
          shard.forEach((experts, l) => {
            assert.equal(experts === null, !c.moeLayers![l], `layer ${l}: null exactly when dense`);
            experts?.gate.forEach((g, e) => assert.equal(g !== null, e >= first && e < end, `rank ${r + 1} expert ${e}`));
          });
        }
        const remote = new InProcessRanks(ops, others, c.hiddenSize);
        const head: Model = createModel(poisonOthers(checkpoint, shardOf(0)), ops, { experts: { shard: shardOf(0), remote } });
        const prefill = maxDifference(pagedLogits(head, sequences, 'prefill'), wholePrefill);
        const steps = remote.layersStarted.length;
        const decode = maxDifference(pagedLogits(head, sequences, 'decode'), wholeDecode);
        console.log(
          `# ${name} (${ops.name}), ${worldSize} ranks: max abs logit difference from the whole model prefill ${prefill.toExponential(2)}, decode ${decode.toExponential(2)}`,
        );
        // Only the order of the f32 sums differs.
        assert.ok(prefill < 1e-5 && decode < 1e-5, `prefill ${prefill}, decode ${decode}`);
        // One start/finish pair per MoE layer per step, in layer order.
        const moeLayers = c.moeLayers!.flatMap((m, l) => (m ? [l] : []));
        assert.deepEqual(remote.layersStarted.slice(0, steps), moeLayers);
        assert.equal(remote.layersStarted.length, moeLayers.length * (1 + Math.max(...sequences.map((s) => s.length))));
      }
    });
  }
}

test('a shard with no experts of its own (more ranks than experts) computes nothing locally and leaves it all to the others', () => {
  const checkpoint = loadFixture('qwen3_moe');
  const worldSize = 5;
  const shard = (rank: number): ExpertShard => ({ rank, worldSize });
  assert.deepEqual(expertRange(4, shard(0)), [0, 0]);
  const others = [1, 2, 3, 4].map((r) => loadExpertShard(checkpoint, referenceOps, shard(r)));
  const head = createModel(checkpoint, referenceOps, {
    experts: { shard: shard(0), remote: new InProcessRanks(referenceOps, others, checkpoint.config.hiddenSize) },
  });
  const { prefill } = referenceErrors(head, fixtureLogits('qwen3_moe'));
  assert.ok(prefill < 1e-5, `prefill error ${prefill}`);
});

test('loadExpertShard refuses a dense checkpoint', () => {
  const dense = loadSafetensorsCheckpoint({
    files: [resolve(FIXTURES, 'tiny_qwen3.safetensors')],
    configPath: resolve(FIXTURES, 'tiny_qwen3_config.json'),
    fastLoad: true,
  });
  assert.throws(() => loadExpertShard(dense, referenceOps, { rank: 0, worldSize: 2 }), /needs numExperts/);
});

// ---- GGUF round trips --------------------------------------------------------------------------

const GGUF_LAYER_NAMES: Record<string, string> = {
  'self_attn.q_proj.weight': 'attn_q.weight',
  'self_attn.k_proj.weight': 'attn_k.weight',
  'self_attn.v_proj.weight': 'attn_v.weight',
  'self_attn.o_proj.weight': 'attn_output.weight',
  'self_attn.q_norm.weight': 'attn_q_norm.weight',
  'self_attn.k_norm.weight': 'attn_k_norm.weight',
  'input_layernorm.weight': 'attn_norm.weight',
  'post_attention_layernorm.weight': 'ffn_norm.weight',
  'mlp.gate_proj.weight': 'ffn_gate.weight',
  'mlp.up_proj.weight': 'ffn_up.weight',
  'mlp.down_proj.weight': 'ffn_down.weight',
  'mlp.gate.weight': 'ffn_gate_inp.weight',
  'block_sparse_moe.gate.weight': 'ffn_gate_inp.weight',
};

/** llama.cpp's converter permutation of Q/K rows (what the loader undoes for Llama-family files). */
function permuteRows(data: Uint8Array, rows: number, heads: number): Uint8Array {
  const rowLen = data.length / rows;
  const headDim = rows / heads;
  const half = headDim / 2;
  const out = new Uint8Array(data.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < half; i++)
        out.set(
          data.subarray((h * headDim + j * half + i) * rowLen, (h * headDim + j * half + i + 1) * rowLen),
          (h * headDim + 2 * i + j) * rowLen,
        );
  return out;
}

/** A matrix [rows, cols] of f32 bytes in `dtype` (f32 as is, q8_0 quantized row by row). */
function encodeMatrix(f32: Uint8Array, rows: number, cols: number, dtype: DType): Uint8Array {
  if (dtype === 'f32') return f32;
  assert.equal(dtype, 'q8_0');
  const x = new Float32Array(new Uint8Array(f32).buffer);
  const out = new Uint8Array(rows * (cols / 32) * 34);
  for (let r = 0; r < rows; r++) out.set(quantizeRowQ8_0(x, cols, r * cols), r * (cols / 32) * 34);
  return out;
}

/**
 * An f32 Hugging Face checkpoint written as llama.cpp writes it: blk.N.* names, experts stacked
 * into ffn_{gate,up,down}_exps [E, rows, cols], Q/K rows permuted for 'llama', matrices of the
 * attention and the experts in `dtype`.
 */
function writeMoeGguf(path: string, checkpoint: Checkpoint, arch: 'qwen3moe' | 'llama', dtype: DType): void {
  const c = checkpoint.config;
  const tensors: GgufTensorInput[] = [];
  const add = (name: string, shape: number[], data: Uint8Array, type: DType = 'f32') =>
    tensors.push({ name, dims: [...shape].reverse(), ggmlType: WEIGHT_DTYPES[type].ggmlType, data });
  const t = (name: string) => checkpoint.tensors.get(name)!;
  add('token_embd.weight', t('model.embed_tokens.weight').shape, t('model.embed_tokens.weight').data);
  add('output_norm.weight', [c.hiddenSize], t('model.norm.weight').data);
  add('output.weight', t('lm_head.weight').shape, t('lm_head.weight').data);
  const matrixType = (cols: number): DType => (cols % 32 === 0 ? dtype : 'f32');
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    for (const [hf, gguf] of Object.entries(GGUF_LAYER_NAMES)) {
      const tensor = checkpoint.tensors.get(`${p}${hf}`);
      if (!tensor) continue;
      let data = tensor.data;
      if (arch === 'llama' && hf === 'self_attn.q_proj.weight') data = permuteRows(data, tensor.shape[0], c.numHeads);
      if (arch === 'llama' && hf === 'self_attn.k_proj.weight') data = permuteRows(data, tensor.shape[0], c.numKvHeads);
      const [rows, cols] = tensor.shape;
      const type = tensor.shape.length === 2 && hf.startsWith('self_attn') ? matrixType(cols) : 'f32';
      add(`blk.${l}.${gguf}`, tensor.shape, tensor.shape.length === 2 ? encodeMatrix(data, rows, cols, type) : data, type);
    }
    if (!c.moeLayers?.[l]) continue;
    const E = c.numExperts!;
    const I = c.moeIntermediateSize!;
    const H = c.hiddenSize;
    const names = checkpoint.tensors.has(`${p}mlp.experts.0.gate_proj.weight`)
      ? (e: number) => [
          `${p}mlp.experts.${e}.gate_proj.weight`,
          `${p}mlp.experts.${e}.up_proj.weight`,
          `${p}mlp.experts.${e}.down_proj.weight`,
        ]
      : (e: number) => [
          `${p}block_sparse_moe.experts.${e}.w1.weight`,
          `${p}block_sparse_moe.experts.${e}.w3.weight`,
          `${p}block_sparse_moe.experts.${e}.w2.weight`,
        ];
    const stack = (which: number, rows: number, cols: number) => {
      const parts = Array.from({ length: E }, (_, e) => encodeMatrix(t(names(e)[which]).data, rows, cols, matrixType(cols)));
      const out = new Uint8Array(parts.reduce((s, q) => s + q.length, 0));
      parts.reduce((at, q) => (out.set(q, at), at + q.length), 0);
      return out;
    };
    add(`blk.${l}.ffn_gate_exps.weight`, [E, I, H], stack(0, I, H), matrixType(H));
    add(`blk.${l}.ffn_up_exps.weight`, [E, I, H], stack(1, I, H), matrixType(H));
    add(`blk.${l}.ffn_down_exps.weight`, [E, H, I], stack(2, H, I), matrixType(I));
  }
  const metadata: Record<string, GgufMetadataValue> = {
    'general.architecture': arch,
    'general.name': `tiny ${arch} moe`,
    [`${arch}.block_count`]: c.numLayers,
    [`${arch}.context_length`]: c.maxPositionEmbeddings,
    [`${arch}.embedding_length`]: c.hiddenSize,
    [`${arch}.feed_forward_length`]: c.intermediateSize,
    [`${arch}.attention.head_count`]: c.numHeads,
    [`${arch}.attention.head_count_kv`]: c.numKvHeads,
    [`${arch}.attention.key_length`]: c.headDim,
    [`${arch}.attention.value_length`]: c.headDim,
    [`${arch}.rope.freq_base`]: typed('f32', c.ropeTheta),
    [`${arch}.attention.layer_norm_rms_epsilon`]: typed('f32', c.rmsNormEps),
    [`${arch}.expert_count`]: c.numExperts!,
    [`${arch}.expert_used_count`]: c.numExpertsPerTok!,
    ...(arch === 'qwen3moe' ? { [`${arch}.expert_feed_forward_length`]: c.moeIntermediateSize! } : {}),
  };
  writeGguf(path, { metadata, tensors });
}

for (const [name, arch, expected] of [
  ['qwen3_moe', 'qwen3moe', 'qwen3_moe'],
  ['qwen3_moe_mixed', 'qwen3moe', 'qwen3_moe'],
  ['mixtral', 'llama', 'mixtral'],
] as const) {
  test(`GGUF round trip of ${name} (general.architecture ${arch}, F32, stacked experts): the HF logits within 1e-5, both load modes`, () => {
    withTempDir((dir) => {
      const path = join(dir, `${name}.gguf`);
      writeMoeGguf(path, loadFixture(name), arch, 'f32');
      for (const fastLoad of [true, false]) {
        const checkpoint = loadCheckpoint(path, { fastLoad });
        assert.equal(checkpoint.config.architecture, expected);
        assert.deepEqual(checkpoint.tensors.get('model.layers.1.mlp.experts.gate_proj')?.shape, [
          4,
          checkpoint.config.moeIntermediateSize,
          8,
        ]);
        const { prefill, decode } = referenceErrors(createModel(checkpoint, referenceOps), fixtureLogits(name));
        assert.ok(prefill < 1e-5 && decode < 1e-5, `prefill ${prefill}, decode ${decode}`);
      }
      const inspected = inspectModel(path);
      assert.deepEqual([inspected.architecture, inspected.runnable, inspected.reason], [arch, true, null]);
    });
  });
}

/** xorshift32 in [-scale, scale): reproducible random weights. */
function randomF32(count: number, seed: number, scale: number, offset = 0): Uint8Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = offset + ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return new Uint8Array(out.buffer);
}

/** A random Qwen3-MoE wide enough for Q8_0 rows (hidden 64, expert width 32), as an in-memory HF checkpoint. */
function wideQwen3Moe(): Checkpoint {
  const config = configFromHf({
    architectures: ['Qwen3MoeForCausalLM'],
    hidden_size: 64,
    intermediate_size: 96,
    moe_intermediate_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    vocab_size: 40,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-6,
    num_experts: 8,
    num_experts_per_tok: 3,
    norm_topk_prob: true,
  });
  const tensors = new Map<string, Tensor>();
  let seed = 1;
  const add = (name: string, shape: number[], scale: number, offset = 0) =>
    tensors.set(name, {
      name,
      dtype: 'f32',
      shape,
      data: randomF32(
        shape.reduce((a, b) => a * b, 1),
        seed++ * 7919,
        scale,
        offset,
      ),
    });
  const H = 64;
  add('model.embed_tokens.weight', [40, H], 1);
  add('lm_head.weight', [40, H], 0.2);
  add('model.norm.weight', [H], 0.1, 1);
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [H], 0.1, 1);
    add(`${p}post_attention_layernorm.weight`, [H], 0.1, 1);
    add(`${p}self_attn.q_proj.weight`, [64, H], 0.2);
    add(`${p}self_attn.k_proj.weight`, [32, H], 0.2);
    add(`${p}self_attn.v_proj.weight`, [32, H], 0.2);
    add(`${p}self_attn.o_proj.weight`, [H, 64], 0.2);
    add(`${p}self_attn.q_norm.weight`, [16], 0.1, 1);
    add(`${p}self_attn.k_norm.weight`, [16], 0.1, 1);
    add(`${p}mlp.gate.weight`, [8, H], 0.5);
    for (let e = 0; e < 8; e++) {
      add(`${p}mlp.experts.${e}.gate_proj.weight`, [32, H], 0.3);
      add(`${p}mlp.experts.${e}.up_proj.weight`, [32, H], 0.3);
      add(`${p}mlp.experts.${e}.down_proj.weight`, [H, 32], 0.3);
    }
  }
  return { source: 'wide qwen3 moe (memory)', format: 'safetensors', config, tensors, ggufMetadata: null };
}

/** The same checkpoint with every matrix that has Q8_0 rows replaced by its Q8_0 round trip (the values the GGUF holds). */
function q8Values(checkpoint: Checkpoint): Checkpoint {
  const tensors = new Map<string, Tensor>();
  for (const [name, t] of checkpoint.tensors) {
    const quantized = /(self_attn\.[qkvo]_proj|experts\.\d+\.\w+)\.weight$/.test(name) && t.shape[1] % 32 === 0;
    if (!quantized) tensors.set(name, t);
    else {
      const [rows, cols] = t.shape;
      const f32 = dequantize('q8_0', encodeMatrix(t.data, rows, cols, 'q8_0'), rows, cols);
      tensors.set(name, { ...t, data: new Uint8Array(f32.buffer) });
    }
  }
  return { ...checkpoint, tensors };
}

test('GGUF round trip with Q8_0 stacked experts: the reference ops match the HF checkpoint of the same values; native int8 kernels within 5% and the same top-1', () => {
  withTempDir((dir) => {
    const hf = wideQwen3Moe();
    const path = join(dir, 'wide-q8.gguf');
    writeMoeGguf(path, hf, 'qwen3moe', 'q8_0');
    const gguf = loadCheckpoint(path, { fastLoad: true });
    assert.equal(gguf.tensors.get('model.layers.0.mlp.experts.down_proj')?.dtype, 'q8_0');
    assert.equal(gguf.tensors.get('model.layers.0.mlp.gate.weight')?.dtype, 'f32');
    const sequences = [
      [1, 5, 7, 2, 30, 31, 8],
      [3, 3, 39, 0],
    ];
    const expected = pagedLogits(createModel(q8Values(hf), referenceOps), sequences, 'prefill');
    const ours = pagedLogits(createModel(gguf, referenceOps), sequences, 'prefill');
    const err = maxDifference(ours, expected);
    console.log(`# wide qwen3moe Q8_0 GGUF (reference ops): max abs logit difference from the HF checkpoint ${err.toExponential(2)}`);
    assert.ok(err < 1e-5, `difference ${err}`);
    const native = pagedLogits(createModel(loadCheckpoint(path, { fastLoad: false }), nativeOps), sequences, 'decode');
    let scale = 0;
    let sameTop = 0;
    let rows = 0;
    const argmax = (r: Float32Array) => r.reduce((best, v, i) => (v > r[best] ? i : best), 0);
    expected.forEach((seq, s) =>
      seq.forEach((row, pos) => {
        scale = Math.max(scale, ...row.map(Math.abs));
        rows++;
        if (argmax(row) === argmax(native[s][pos])) sameTop++;
      }),
    );
    const nativeErr = maxDifference(native, expected);
    console.log(
      `# wide qwen3moe Q8_0 GGUF (native, decode): max abs difference ${nativeErr.toExponential(2)} (max |logit| ${scale.toFixed(2)}), same top-1 in ${sameTop}/${rows} rows`,
    );
    assert.ok(nativeErr < 0.05 * scale, `native difference ${nativeErr}`);
    assert.ok(sameTop >= rows - 1, `top-1 agrees in ${sameTop} of ${rows} rows`);
  });
});

test('GGUF expert shard: each stacked tensor is taken once keeping only the shard\u2019s experts\u2019 bytes; every other tensor is released, never taken', () => {
  withTempDir((dir) => {
    const hf = wideQwen3Moe();
    const path = join(dir, 'wide-q8.gguf');
    writeMoeGguf(path, hf, 'qwen3moe', 'q8_0');
    for (const ops of [referenceOps, nativeOps]) {
      const checkpoint = loadCheckpoint(path, { fastLoad: true });
      // What the model tells the loader's residency, recorded on the way to the real one.
      const inner = checkpoint.residency!;
      const told = new Map<string, { inPlace: boolean; kept?: { begin: number; end: number } }[]>();
      checkpoint.residency = {
        totalBytes: inner.totalBytes,
        taken: (t, inPlace, kept) => {
          told.set(t.name, [...(told.get(t.name) ?? []), { inPlace, kept }]);
          inner.taken(t, inPlace, kept);
        },
      };
      const shard = loadExpertShard(checkpoint, ops, { rank: 1, worldSize: 2 });
      const stacked = new Set(
        [0, 1].flatMap((l) => ['down_proj', 'gate_proj', 'up_proj'].map((m) => `model.layers.${l}.mlp.experts.${m}`)),
      );
      assert.deepEqual([...told.keys()].sort(), [...checkpoint.tensors.keys()].sort(), 'the loader hears of every tensor');
      for (const [name, calls] of told) {
        assert.equal(calls.length, 1, `${name} told once`);
        const [{ inPlace, kept }] = calls;
        if (stacked.has(name)) {
          const bytes = checkpoint.tensors.get(name)!.data.length;
          // Experts 4..7 of 8: the second half of the tensor.
          assert.deepEqual(kept, { begin: bytes / 2, end: bytes }, name);
          // The reference ops multiply Q8_0 as stored; the native ones pack each expert's slice.
          assert.equal(inPlace, ops === referenceOps, name);
        } else assert.deepEqual([inPlace, kept], [false, undefined], `${name} released`);
      }
      assert.deepEqual(
        shard[0]!.gate.map((g) => g !== null),
        [false, false, false, false, true, true, true, true],
      );
    }
  });
});

// ---- the Library --------------------------------------------------------------------------------

test('the Library reports the MoE checkpoints as runnable (config.json + model.safetensors directories)', () => {
  withTempDir((dir) => {
    const cases = [
      {
        config: resolve(FIXTURES, 'tiny_mixtral_config.json'),
        weights: resolve(FIXTURES, 'tiny_mixtral.safetensors'),
        arch: 'MixtralForCausalLM',
        runs: 'mixtral',
      },
      {
        config: resolve(FIXTURES, 'tiny_qwen3_moe_config.json'),
        weights: resolve(FIXTURES, 'tiny_qwen3_moe.safetensors'),
        arch: 'Qwen3MoeForCausalLM',
        runs: 'qwen3_moe',
      },
      { config: resolve(FUSED, 'config.json'), weights: resolve(FUSED, 'weights.safetensors'), arch: 'qwen3_moe', runs: 'qwen3_moe' },
    ];
    cases.forEach((c, i) => {
      const model = join(dir, `m${i}`);
      mkdirSync(model);
      copyFileSync(c.config, join(model, 'config.json'));
      copyFileSync(c.weights, join(model, 'model.safetensors'));
      const inspected = inspectModel(model);
      assert.deepEqual([inspected.architecture, inspected.runnable, inspected.reason], [c.arch, true, null]);
      assert.equal(loadCheckpoint(model, { fastLoad: true }).config.architecture, c.runs);
    });
  });
});

test('registry: MoE checkpoints get their families by name, else by architecture', () => {
  const family = (arch: string, name: string) => findModelToml('/nowhere/x', arch, name, { checkpointName: null })?.model.family;
  assert.equal(family('qwen3_moe', 'Qwen/Qwen3-30B-A3B'), 'qwen3-moe');
  assert.equal(family('qwen3_moe', 'Qwen/Qwen3-Coder-30B-A3B-Instruct'), 'qwen3-coder');
  assert.equal(family('qwen3_moe', 'served-moe'), 'qwen3-moe');
  assert.equal(family('mixtral', 'mistralai/Mixtral-8x7B-Instruct-v0.1'), 'mixtral');
  assert.equal(family('mixtral', 'bot'), 'mixtral');
  assert.equal(findModelToml('/nowhere/x', 'mixtral', 'bot')?.model.toolCallParser, 'fam2');
});
