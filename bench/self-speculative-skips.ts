// How the self-speculative drafter's skip set was chosen: in-process, for each model and prompt
// kind, candidate skip sets — the start-up calibration's (the k most redundant layers by input /
// output cosine similarity), contiguous middle blocks, every other layer — are run as exact greedy
// self-speculative decoding (SelfDrafter proposes, the full model verifies, the longest agreeing
// prefix plus one token is kept; the output is checked against plain greedy decoding). Counts are
// deterministic; the speed-up estimate multiplies them by per-pass times measured here (medians of
// alternating timing rounds): plain = tokens × decode step; speculative = verify steps × verify
// pass (K + 1 rows) + draft passes × draft pass.
//
//   npx tsc -p tsconfig.json && node dist/bench/self-speculative-skips.js [--models a,b] [--num-drafts 2,4]
//       [--confidence 0,0.5] [--max-tokens 96] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeOps } from '../src/kernels/index.js';
import type { KvLayer } from '../src/kernels/ops.js';
import { allocateKvCache } from '../src/engine/kv-cache.js';
import { createSequence, type Sequence } from '../src/engine/sequence.js';
import { liveDraftHead } from '../src/engine/speculative/draft-head.js';
import { SelfDrafter } from '../src/engine/speculative/self-drafter.js';
import { bestCandidate, calibrateSkipSets } from '../src/engine/speculative/skip-calibration.js';
import { createModel, type ForwardBatch, type ForwardOptions, type Model, type OutputHead } from '../src/model/architectures/index.js';
import { loadCheckpoint } from '../src/model/loaders/index.js';
import { loadGgufTokenizer } from '../src/model/gguf-tokenizer.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS_DIR = resolve(REPO_ROOT, '..', 'shared', 'models');
type PromptKind = 'copy' | 'prose';

interface BenchModel {
  readonly name: string;
  readonly path: string;
  /** Prompt token ids per kind. */
  readonly prompts: Record<PromptKind, number[][]>;
  readonly stopTokenIds: number[];
}

const chatTurn = (tok: Tokenizer, question: string, thinking: boolean) =>
  tok.encode(`<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n${thinking ? '' : '<think>\n\n</think>\n\n'}`);

/** The models and their prompts: copy/edit tasks (the answer repeats the prompt) and open text. */
function benchModels(): BenchModel[] {
  const chatDir = resolve(MODELS_DIR, 'svc-tiny-chat');
  const chat = loadTokenizer(chatDir);
  const storiesPath = resolve(MODELS_DIR, 'quant-zoo', 'stories260k-wide-q8_0.gguf');
  const stories = loadGgufTokenizer(storiesPath);
  const story = (text: string) => stories.encode(text, { addSpecialTokens: true });
  return [
    {
      name: 'svc-tiny-chat',
      path: chatDir,
      stopTokenIds: [151645],
      prompts: {
        copy: [
          chatTurn(chat, 'Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river bank.', false),
          chatTurn(chat, 'Write upper case: hello world, hello world, hello world, hello world.', false),
          chatTurn(chat, 'Fix the misspelled keyword in this line: retrun x + y; retrun x + y; retrun x + y;', false),
          chatTurn(chat, 'Reverse this list: apple, banana, cherry, date, elderberry, fig, grape.', false),
        ],
        prose: [
          chatTurn(chat, 'What is the capital of France?', true),
          chatTurn(chat, 'What sound does a cow make?', true),
          chatTurn(chat, 'Give me a JSON object with name Alice and age 30', true),
          chatTurn(chat, 'Count from one to ten.', true),
        ],
      },
    },
    {
      name: 'stories260k-wide-q8_0',
      path: storiesPath,
      stopTokenIds: [2],
      prompts: {
        copy: [
          story('Lily saw a big red ball in the park. She wanted to play with it. Lily saw a big red ball in the park. She'),
          story('Tom had a little dog. The dog liked to run and jump. Tom had a little dog. The dog'),
        ],
        prose: [story('Once upon a time'), story('Tom and his dog went to the park'), story('One day, Tom and his mom')],
      },
    },
  ];
}

const BLOCK = 16;
const BLOCKS = 64;

/** One sequence in its own blocks 0…BLOCKS-1: greedy decoding, plain or speculative. */
class Decoder {
  readonly kv: KvLayer[];
  private readonly table = Int32Array.from({ length: BLOCKS }, (_, i) => i);

  constructor(readonly model: Model) {
    this.kv = allocateKvCache(model.config, BLOCKS, BLOCK, 'bf16');
  }

  /** Rows [start, end) of seq through the full model, logits for every row (or the last). */
  forward(seq: Sequence, start: number, end: number, allRows: boolean, options?: ForwardOptions): Float32Array {
    const n = end - start;
    const positions = Int32Array.from({ length: n }, (_, i) => start + i);
    const batch: ForwardBatch = {
      tokens: Int32Array.from(seq.tokens.slice(start, end)),
      positions,
      slots: positions,
      seqs: [{ qStart: 0, qLen: n, kvLen: end, blockTable: this.table }],
      logitRows: allRows ? positions.map((_, i) => i) : Int32Array.of(n - 1),
    };
    return this.model.forward(batch, this.kv, options);
  }

  /** Greedy output of `prompt`; with a drafter, counts of verify steps and accepted draft tokens. */
  generate(prompt: number[], maxTokens: number, stop: number[], drafter: SelfDrafter | null, room: number) {
    const V = this.model.config.vocabSize;
    const seq = createSequence(
      1,
      {
        promptTokens: prompt,
        maxTokens,
        sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
        stopTokenIds: stop,
        timeoutMs: 0,
        logprobs: 0,
      },
      0,
    );
    seq.blockTable.push(...this.table);
    seq.tokens.push(argmax(this.forward(seq, 0, prompt.length, false), 0, V));
    seq.numCached = prompt.length;
    let steps = 0;
    let accepted = 0;
    const done = () => seq.tokens.length - prompt.length >= maxTokens || seq.stopTokenIds.has(seq.tokens[seq.tokens.length - 1]);
    while (!done()) {
      const room1 = Math.min(room, maxTokens - (seq.tokens.length - prompt.length) - 1);
      const draft = drafter && room1 > 0 ? drafter.propose([{ seq, room: room1 }])[0] : [];
      const base = seq.tokens.length;
      seq.tokens.push(...draft);
      const logits = this.forward(seq, seq.numCached, seq.tokens.length, true);
      seq.tokens.length = base;
      // As the engine counts: a draft token taken is accepted, also the one that ends the sequence.
      for (let i = 0; ; i++) {
        const t = argmax(logits, i * V, V);
        seq.tokens.push(t);
        if (i < draft.length && t === draft[i]) accepted++;
        if (done() || i >= draft.length || t !== draft[i]) break;
      }
      seq.numCached = seq.tokens.length - 1;
      steps++;
    }
    return { ids: seq.tokens.slice(prompt.length), steps, accepted };
  }
}

function argmax(a: Float32Array, offset: number, len: number): number {
  let best = 0;
  for (let i = 1; i < len; i++) if (a[offset + i] > a[offset + best]) best = i;
  return best;
}

/** Median ms of `fn` over rounds of `per` calls, the candidates' rounds interleaved. */
function timeAll(fns: (() => void)[], rounds = 9, per = 20): number[] {
  const samples = fns.map((): number[] => []);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, i) => {
      const t0 = performance.now();
      for (let j = 0; j < per; j++) fn();
      samples[i].push((performance.now() - t0) / per);
    });
  }
  return samples.map((s) => s.sort((a, b) => a - b)[Math.floor(s.length / 2)]);
}

interface Candidate {
  source: string;
  skip: number[];
  /** Drafts score the whole vocabulary instead of the live-row head (to show what the head is worth). */
  fullHead?: boolean;
  /** Run with every --confidence value (the others with 0 only). */
  confidences?: boolean;
}

/** The calibration's sets, then every single layer and contiguous pair, every other layer, and two references. */
function candidates(L: number, calibrated: number[][], pick: number[]): Candidate[] {
  const out: Candidate[] = calibrated.map((skip) => ({ source: 'cosine', skip, confidences: skip.join(',') === pick.join(',') }));
  const seen = new Set(out.map((c) => c.skip.join(',')));
  const add = (source: string, skip: number[]) => {
    if (seen.has(skip.join(','))) return;
    seen.add(skip.join(','));
    out.push({ source, skip });
  };
  for (let l = 0; l < L; l++) add('one layer', [l]);
  for (let l = 0; l + 1 < L; l++) add('pair', [l, l + 1]);
  add(
    'alternate',
    Array.from({ length: L }, (_, i) => i).filter((l) => l % 2 === 1 && l < L - 1),
  );
  // References: the pick scoring the whole vocabulary, and no layer skipped (the head alone).
  out.push({ source: 'pick, full head', skip: pick, fullHead: true }, { source: 'none skipped', skip: [] });
  return out;
}

interface Row {
  model: string;
  kind: PromptKind;
  source: string;
  skip: number[];
  numDrafts: number;
  minConfidence: number;
  acceptedPerVerify: number;
  tokensPerStep: number;
  passesPerStep: number;
  estSpeedup: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function benchModel(spec: BenchModel, numDrafts: number[], confidences: number[], maxTokens: number): { rows: Row[]; notes: string[] } {
  const model = createModel(loadCheckpoint(spec.path, { fastLoad: true }), nativeOps);
  const L = model.config.numLayers;
  const head: OutputHead | null = liveDraftHead(model);
  const cal = calibrateSkipSets(model, head);
  const cands = candidates(
    L,
    cal.candidates.map((c) => [...c.skip]),
    [...bestCandidate(cal, Math.max(...numDrafts)).skip],
  );
  const dec = new Decoder(model);
  const notes = [
    `${spec.name}: cosine ${cal.cosine.map((c) => c.toFixed(3)).join(' ')}; calibration agreement ` +
      cal.candidates.map((c) => `[${c.skip.join(',')}] ${c.agreement.toFixed(2)}`).join(', ') +
      `; picks ${numDrafts.map((k) => `[${bestCandidate(cal, k).skip.join(',')}] at K ${k}`).join(', ')}`,
  ];

  // Per-pass times at a context of ~100 tokens: a decode step, a verify of K + 1 rows, each candidate's draft pass.
  const probe = createSequence(
    0,
    {
      promptTokens: Array.from({ length: 110 }, (_, i) => spec.prompts.prose[0][i % spec.prompts.prose[0].length]),
      maxTokens: 1,
      sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
      stopTokenIds: [],
      timeoutMs: 0,
      logprobs: 0,
    },
    0,
  );
  dec.forward(probe, 0, 100, false);
  const draftOpts = cands.map((c) => ({ skipLayers: new Set(c.skip), head: c.fullHead ? undefined : (head ?? undefined) }));
  const times = timeAll([
    () => dec.forward(probe, 100, 101, false),
    ...numDrafts.map((k) => () => dec.forward(probe, 100, 101 + k, true)),
    ...draftOpts.map((o) => () => dec.forward(probe, 100, 101, false, o)),
  ]);
  const decodeMs = times[0];
  const verifyMs = new Map(numDrafts.map((k, i) => [k, times[1 + i]]));
  const draftMs = times.slice(1 + numDrafts.length);
  notes.push(
    `${spec.name}: decode step ${decodeMs.toFixed(3)} ms; verify ${numDrafts.map((k) => `K ${k}: ${verifyMs.get(k)!.toFixed(3)} ms`).join(', ')}; ` +
      `draft pass ${cands.map((c, i) => `[${c.skip.join(',')}] ${draftMs[i].toFixed(3)} ms`).join(', ')}`,
  );

  const rows: Row[] = [];
  for (const kind of ['copy', 'prose'] as const) {
    const prompts = spec.prompts[kind];
    const plain = prompts.map((p) => dec.generate(p, maxTokens, spec.stopTokenIds, null, 0).ids);
    const tokens = plain.reduce((s, ids) => s + ids.length, 0);
    cands.forEach((c, ci) => {
      for (const k of numDrafts) {
        for (const minConfidence of c.confidences ? confidences : [0]) {
          const drafter = new SelfDrafter(model, dec.kv, BLOCK, {
            skipLayers: () => draftOpts[ci].skipLayers,
            head: draftOpts[ci].head ?? null,
            minConfidence,
          });
          let steps = 0;
          let accepted = 0;
          prompts.forEach((p, i) => {
            const r = dec.generate(p, maxTokens, spec.stopTokenIds, drafter, k);
            if (JSON.stringify(r.ids) !== JSON.stringify(plain[i]))
              throw new Error(`${spec.name} ${kind} [${c.skip}]: output differs from plain greedy`);
            steps += r.steps;
            accepted += r.accepted;
          });
          const specMs = steps * verifyMs.get(k)! + drafter.passes * draftMs[ci];
          rows.push({
            model: spec.name,
            kind,
            source: c.source,
            skip: c.skip,
            numDrafts: k,
            minConfidence,
            acceptedPerVerify: accepted / steps,
            tokensPerStep: (tokens - prompts.length) / steps,
            passesPerStep: drafter.passes / steps,
            estSpeedup: ((tokens - prompts.length) * decodeMs) / specMs,
          });
        }
      }
    });
  }
  return { rows, notes };
}

function main(): void {
  const models = arg('models', 'svc-tiny-chat,stories260k-wide-q8_0').split(',');
  const numDrafts = arg('num-drafts', '2,4').split(',').map(Number);
  const confidences = arg('confidence', '0,0.5').split(',').map(Number);
  const maxTokens = Number(arg('max-tokens', '96'));
  const out = arg('out', resolve(REPO_ROOT, 'bench', 'results', 'self-speculative-skips.json'));
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const spec of benchModels().filter((m) => models.includes(m.name))) {
    const r = benchModel(spec, numDrafts, confidences, maxTokens);
    rows.push(...r.rows);
    notes.push(...r.notes);
    process.stderr.write(`${spec.name} done\n`);
  }
  console.log('| model | prompts | skip set | K | min conf. | accepted / verify | tokens / step | draft passes / step | est. speed-up |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows)
    console.log(
      `| ${r.model} | ${r.kind} | ${r.source} [${r.skip.join(',')}] | ${r.numDrafts} | ${r.minConfidence} | ${r.acceptedPerVerify.toFixed(2)} | ` +
        `${r.tokensPerStep.toFixed(2)} | ${r.passesPerStep.toFixed(2)} | ×${r.estSpeedup.toFixed(2)} |`,
    );
  for (const n of notes) console.log(`\n- ${n}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), maxTokens, rows, notes }, null, 2) + '\n');
}

main();
