// Speculative decoding through the real engine (worker, scheduler, verify), per model, prompt kind
// (copy/edit, open prose), drafter and --num-drafts: acceptance — accepted draft tokens per verify
// step, and tokens taken per step — and single-stream decode tok/s, against the same engine without
// a drafter. Greedy, so every run must produce the plain engine's tokens (checked). Each rep runs
// every configuration in turn (plain first), so load from other processes spreads over all of them;
// tok/s are medians over reps, speed-ups medians of the per-rep ratios to plain.
//
//   npx tsc -p tsconfig.json && node dist/bench/speculative.js [--models a,b] [--drafters self,ngram]
//       [--num-drafts 2,4] [--reps 5] [--max-tokens 96] [--out FILE]
//
// --models: svc-tiny-chat, stories260k-wide-q8_0 (default both, from ../shared/models).
// --drafters: draft modes (DRAFT_MODES; default self). Drafter-specific start-up notes come from
// EngineInfo.drafterDetail; nothing below knows one drafter from another.
// Decode tok/s: (tokens − 1) / (time of the last token − time of the first), summed over a kind's
// prompts: the prefill and the first token are left out.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEngine, type EngineOptions, type RunningEngine } from '../src/engine/engine-client.js';
import type { SpeculativeOptions } from '../src/engine/messages.js';
import { DRAFT_MODES, type DraftMode } from '../src/engine/speculative/drafter.js';
import type { GenerationRequest } from '../src/engine/types.js';
import { loadGgufTokenizer } from '../src/model/gguf-tokenizer.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS_DIR = resolve(REPO_ROOT, '..', 'shared', 'models');

export type PromptKind = 'copy' | 'prose';

export interface BenchModel {
  readonly name: string;
  readonly path: string;
  /** Prompt token ids per kind. */
  readonly prompts: Record<PromptKind, number[][]>;
  readonly stopTokenIds: number[];
}

const chatTurn = (tok: Tokenizer, question: string, thinking: boolean) =>
  tok.encode(`<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n${thinking ? '' : '<think>\n\n</think>\n\n'}`);

/** The models and their prompts: copy/edit tasks (the answer repeats the prompt) and open text. */
export function benchModels(): BenchModel[] {
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

export interface RunResult {
  ids: number[][];
  /** Summed over the prompts: tokens after the first, and ms from the first token to the last. */
  decodeTokens: number;
  decodeMs: number;
  drafted: number;
  accepted: number;
  verifySteps: number;
}

/** Runs `prompts` one after another, greedy, and measures decode time and the drafter's counters. */
export async function runPrompts(
  engine: RunningEngine,
  prompts: number[][],
  maxTokens: number,
  stopTokenIds: number[],
): Promise<RunResult> {
  const r: RunResult = { ids: [], decodeTokens: 0, decodeMs: 0, drafted: 0, accepted: 0, verifySteps: 0 };
  for (const promptTokens of prompts) {
    const req: GenerationRequest = {
      promptTokens,
      maxTokens,
      sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
      stopTokenIds,
      timeoutMs: 0,
      logprobs: 0,
    };
    const before = engine.stats();
    const ids: number[] = [];
    let first = 0;
    let last = 0;
    for await (const ev of engine.submit(req).events) {
      if (ev.type !== 'tokens') continue;
      last = performance.now();
      if (ids.length === 0) first = last;
      ids.push(...ev.ids);
    }
    const after = engine.stats();
    r.ids.push(ids);
    r.decodeTokens += ids.length - 1;
    r.decodeMs += last - first;
    r.drafted += after.draftedTokens - before.draftedTokens;
    r.accepted += after.acceptedDraftTokens - before.acceptedDraftTokens;
    r.verifySteps += after.verifySteps - before.verifySteps;
  }
  return r;
}

export function engineOptions(path: string, speculative: SpeculativeOptions | null): EngineOptions {
  return {
    modelPath: path,
    fastLoad: true,
    kvCacheDtype: 'bf16',
    maxSeqLen: 512,
    maxBatchSize: 8,
    maxPrefillTokens: 256,
    maxNumSeqs: 8,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 256,
    blockSize: 16,
    enablePrefixCaching: false,
    swapSpaceBytes: 0,
    speculative,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

interface Row {
  model: string;
  kind: PromptKind;
  drafter: string;
  numDrafts: number;
  acceptedPerVerify: number;
  tokensPerStep: number;
  decodeTokS: number;
  plainTokS: number;
  speedup: number;
  reps: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

async function main(): Promise<void> {
  const models = arg('models', 'svc-tiny-chat,stories260k-wide-q8_0').split(',');
  const drafters = arg('drafters', 'self').split(',') as DraftMode[];
  for (const d of drafters) if (!DRAFT_MODES.includes(d)) throw new Error(`unknown drafter ${d}`);
  const numDrafts = arg('num-drafts', '2,4').split(',').map(Number);
  const reps = Number(arg('reps', '5'));
  const maxTokens = Number(arg('max-tokens', '96'));
  const out = arg('out', resolve(REPO_ROOT, 'bench', 'results', 'speculative.json'));
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const model of benchModels().filter((m) => models.includes(m.name))) {
    const configs: { label: string; drafter: string; numDrafts: number; spec: SpeculativeOptions | null }[] = [
      { label: 'plain', drafter: 'none', numDrafts: 0, spec: null },
    ];
    for (const mode of drafters)
      for (const k of numDrafts)
        configs.push({
          label: `${mode} K${k}`,
          drafter: mode,
          numDrafts: k,
          spec: { mode, numDrafts: k, mtpQuantization: 'bf16', mtpVocab: 0 },
        });
    const engines: RunningEngine[] = [];
    for (const c of configs) {
      const engine = await startEngine(engineOptions(model.path, c.spec));
      engines.push(engine);
      if (engine.info.drafterDetail) notes.push(`${model.name}, ${c.label}: ${engine.info.drafterDetail}`);
    }
    for (const kind of ['copy', 'prose'] as const) {
      const results: RunResult[][] = configs.map(() => []);
      for (let rep = 0; rep < reps; rep++) {
        for (let i = 0; i < configs.length; i++) {
          const r = await runPrompts(engines[i], model.prompts[kind], maxTokens, model.stopTokenIds);
          // Greedy speculative decoding is exact: any difference from plain decoding is a bug.
          if (i > 0 && JSON.stringify(r.ids) !== JSON.stringify(results[0][0].ids))
            throw new Error(`${model.name} ${kind} ${configs[i].label}: output differs from plain decoding`);
          results[i].push(r);
          process.stderr.write(
            `${model.name} ${kind} rep ${rep + 1} ${configs[i].label}: ${((1000 * r.decodeTokens) / r.decodeMs).toFixed(1)} tok/s\n`,
          );
        }
      }
      const tokSOf = (r: RunResult) => (1000 * r.decodeTokens) / r.decodeMs;
      const plainTokS = median(results[0].map(tokSOf));
      configs.forEach((c, i) => {
        const r0 = results[i][0]; // counts are identical across reps (greedy, deterministic drafts)
        const tokS = median(results[i].map(tokSOf));
        rows.push({
          model: model.name,
          kind,
          drafter: c.drafter,
          numDrafts: c.numDrafts,
          acceptedPerVerify: r0.verifySteps > 0 ? r0.accepted / r0.verifySteps : 0,
          tokensPerStep: r0.verifySteps > 0 ? (r0.accepted + r0.verifySteps) / r0.verifySteps : 1,
          decodeTokS: tokS,
          plainTokS,
          // Against plain decoding in the same rep (neighbouring runs share the machine's load).
          speedup: median(results[i].map((r, rep) => tokSOf(r) / tokSOf(results[0][rep]))),
          reps,
        });
      });
    }
    for (const e of engines) await e.shutdown();
  }
  const table = [
    '| model | prompts | drafter | drafts | accepted / verify | tokens / step | decode tok/s | plain tok/s | speed-up |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.model} | ${r.kind} | ${r.drafter} | ${r.numDrafts || '–'} | ${r.acceptedPerVerify.toFixed(2)} | ${r.tokensPerStep.toFixed(2)} | ` +
        `${r.decodeTokS.toFixed(1)} | ${r.plainTokS.toFixed(1)} | ×${r.speedup.toFixed(2)} |`,
    ),
  ].join('\n');
  console.log(table);
  for (const n of notes) console.log(`\n- ${n}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), reps, maxTokens, rows, notes }, null, 2) + '\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
