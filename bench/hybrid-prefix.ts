// Second-turn time to first token on a hybrid (Qwen3.5: Gated DeltaNet + gated attention) checkpoint,
// with and without the prefix cache. A hybrid model's recurrent layers keep one fixed-size state per
// sequence, which cached KV blocks cannot rebuild; under --enable-prefix-caching svc snapshots that
// state at checkpoints of a prompt's prefill (every --ssm-checkpoint-interval blocks, and the prompt's
// last whole block) and resumes a prefix hit from the latest snapshot along it. So a second turn —
// the first prompt, its answer and a short new message — should prefill only what follows the first
// prompt's last whole block.
//
//   node dist/bench/hybrid-prefix.js [--prompts 2000,8000] [--answer N] [--reps N] [--threads N]
//                                    [--model PATH | --small] [--cache DIR] [--out FILE] [--svc-args "..."]
//
// Two `svc serve` processes on the generated qwen35 checkpoint (bf16 safetensors), both up for the
// whole run: one with --enable-prefix-caching (default --ssm-cache-slots and
// --ssm-checkpoint-interval), one without. After one short unmeasured conversation per server, each
// rep sends every server the same fresh conversation (a new first prompt per rep and length, so
// turn 1 never hits the cache), alternating which server goes first. Per server: turn 1 = system +
// a user message of about P tokens, streamed, greedy, --answer tokens (EOS ignored); turn 2 = turn
// 1's messages + its answer + a short user message, one token. TTFT is request start → the first
// streamed chunk carrying a token (text or the finish).
// Medians over reps; turn 2's usage.prompt_tokens_details.cached_tokens alongside.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ensureCheckpoint } from './gen-checkpoints.js';
import { log, machineInfo, parseFlags, positiveInt, REPO_ROOT, threadCount } from './harness.js';
import { stopServer } from './server-process.js';
import { forEachSseData } from './sse.js';
import { startSvcServer } from './svc.js';
import { randomInts } from './weights.js';
import { loadTokenizer } from '../src/model/tokenizer.js';

const USAGE = [
  'usage: node dist/bench/hybrid-prefix.js [--prompts 2000,8000] [--answer N] [--reps N] [--threads N]',
  '                                        [--model PATH | --small] [--cache DIR] [--out FILE] [--svc-args "..."]',
].join('\n');

const CONFIGS = [
  { id: 'cache', label: 'prefix cache', args: ['--enable-prefix-caching'] },
  { id: 'plain', label: 'no cache', args: [] as string[] },
] as const;
type ConfigId = (typeof CONFIGS)[number]['id'];

const SYSTEM = 'You are a careful assistant. Answer briefly and plainly.';
const FOLLOW_UP = 'Thanks. Now say the same in one short sentence.';

/** Common English words: a message of N of them is about N tokens (each one token with its leading space). */
const WORDS = (
  'the of and to in is was for on that with as by at from his her they this which or had are but not be one ' +
  'have an all were when there can their more if out so up said what about into than them only other new some ' +
  'time could these two may then first any like now my such make over our even most after also made many before ' +
  'must through back years where much your way well down should because each just those people how too little ' +
  'state good very world still own see men work long here get both between life being under never day same ' +
  'another know while last might us great old year off come since against go came right used take three house ' +
  'water small found general place home high large number every part around city river open road light night'
).split(' ');

interface Options {
  promptTokens: number[];
  answerTokens: number;
  reps: number;
  threads: number;
  small: boolean;
  model: string | null;
  cacheDir?: string;
  out: string;
  svcArgs: string[];
}

function parseCli(argv: string[]): Options {
  const known = ['--prompts', '--answer', '--reps', '--threads', '--model', '--cache', '--out', '--svc-args'];
  const { flags, switches } = parseFlags(argv, known, ['--small'], USAGE);
  const get = (f: string) => flags.get(f);
  const small = switches.has('--small');
  const int = (f: string, fallback: number) => (get(f) ? positiveInt(get(f)!, f) : fallback);
  const promptTokens = (get('--prompts') ?? (small ? '200' : '2000'))
    .split(',')
    .filter(Boolean)
    .map((p) => positiveInt(p, '--prompts'));
  return {
    promptTokens,
    answerTokens: int('--answer', small ? 8 : 32),
    reps: int('--reps', small ? 1 : 3),
    threads: threadCount(get('--threads')),
    small,
    model: get('--model') ? resolve(get('--model')!) : null,
    cacheDir: get('--cache') ? resolve(get('--cache')!) : undefined,
    out: resolve(get('--out') ?? resolve(REPO_ROOT, 'bench', 'results', small ? 'hybrid-prefix-small.json' : 'hybrid-prefix.json')),
    svcArgs: (get('--svc-args') ?? '').split(/\s+/).filter(Boolean),
  };
}

type Message = { role: 'system' | 'user' | 'assistant'; content: string };

/** One request's outcome: TTFT, the text it streamed, and its usage. */
interface TurnResult {
  ttftMs: number;
  totalMs: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

interface ChatFrame {
  choices?: { delta?: { content?: string; reasoning?: string }; finish_reason?: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } } | null;
  error?: { message?: string };
}

/** A streamed, greedy /v1/chat/completions request of `maxTokens` tokens (EOS ignored). */
async function chatTurn(url: string, messages: Message[], maxTokens: number): Promise<TurnResult & { text: string }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'bench',
      messages,
      max_tokens: maxTokens,
      temperature: 0,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok || !res.body) throw new Error(`svc /v1/chat/completions: HTTP ${res.status}: ${await res.text()}`);
  let ttftMs = NaN;
  let text = '';
  let usage: ChatFrame['usage'] = null;
  await forEachSseData(res.body as AsyncIterable<Uint8Array>, (data) => {
    if (data === '[DONE]') return;
    const frame = JSON.parse(data) as ChatFrame;
    if (frame.error) throw new Error(`svc stream error: ${frame.error.message ?? JSON.stringify(frame.error)}`);
    if (frame.usage) usage = frame.usage;
    for (const c of frame.choices ?? []) {
      const piece = (c.delta?.content ?? '') + (c.delta?.reasoning ?? '');
      text += piece;
      // The opening chunk (role, empty content) comes before any token; the first text or the finish is the first token out.
      if (Number.isNaN(ttftMs) && (piece !== '' || c.finish_reason)) ttftMs = performance.now() - t0;
    }
  });
  const totalMs = performance.now() - t0;
  const u = usage as ChatFrame['usage'];
  if (!u) throw new Error('svc stream ended without a usage chunk');
  return {
    ttftMs,
    totalMs,
    text,
    promptTokens: u.prompt_tokens,
    cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
    completionTokens: u.completion_tokens,
  };
}

/** A user message of about `tokens` tokens of word salad, its words drawn from `seed`. */
function firstMessage(tokens: number, seed: number, count: (text: string) => number): string {
  const ids = randomInts(seed, tokens + 64, WORDS.length);
  const words: string[] = [`Conversation ${seed}.`];
  for (let i = 0; words.length < ids.length; i++) words.push(WORDS[ids[i]] + ((i + 1) % 12 === 0 ? '.' : ''));
  // Trim to the target by the tokenizer's count (about one token a word, so a few passes).
  let n = Math.min(words.length, tokens);
  for (let guess = 0; guess < 8; guess++) {
    const have = count(words.slice(0, n).join(' '));
    if (have === tokens) break;
    n = Math.max(1, Math.min(words.length, n + (tokens - have)));
  }
  return words.slice(0, n).join(' ');
}

interface Conversation {
  turn1: TurnResult;
  turn2: TurnResult;
}

async function conversation(url: string, first: string, answerTokens: number): Promise<Conversation> {
  const messages: Message[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: first },
  ];
  const t1 = await chatTurn(url, messages, answerTokens);
  const t2 = await chatTurn(url, [...messages, { role: 'assistant', content: t1.text }, { role: 'user', content: FOLLOW_UP }], 1);
  const strip = ({ text: _text, ...rest }: TurnResult & { text: string }): TurnResult => rest;
  return { turn1: strip(t1), turn2: strip(t2) };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

interface LengthResult {
  /** Target tokens of turn 1's user message. */
  promptTarget: number;
  /** Per configuration, one conversation per rep (in run order). */
  runs: Record<ConfigId, Conversation[]>;
}

function summarize(r: LengthResult, id: ConfigId) {
  const runs = r.runs[id];
  return {
    // Turn 2's prompt varies by a token or two between reps (turn 1's answer differs).
    turn1PromptTokens: median(runs.map((c) => c.turn1.promptTokens)),
    turn2PromptTokens: median(runs.map((c) => c.turn2.promptTokens)),
    turn1TtftMs: median(runs.map((c) => c.turn1.ttftMs)),
    turn2TtftMs: median(runs.map((c) => c.turn2.ttftMs)),
    turn1CachedTokens: median(runs.map((c) => c.turn1.cachedTokens)),
    turn2CachedTokens: median(runs.map((c) => c.turn2.cachedTokens)),
  };
}

function table(results: LengthResult[]): string {
  const lines = [
    '| turn-1 prompt | turn-2 prompt | server | turn-1 TTFT ms | turn-2 TTFT ms | turn-2 cached tokens | turn-2 / turn-1 TTFT |',
    '|---:|---:|---|---:|---:|---:|---:|',
  ];
  const notes: string[] = [];
  for (const r of results) {
    const s = Object.fromEntries(CONFIGS.map((c) => [c.id, summarize(r, c.id)])) as Record<ConfigId, ReturnType<typeof summarize>>;
    for (const c of CONFIGS) {
      const x = s[c.id];
      lines.push(
        `| ${x.turn1PromptTokens} | ${x.turn2PromptTokens} | ${c.label} | ${x.turn1TtftMs.toFixed(0)} | ${x.turn2TtftMs.toFixed(0)} | ` +
          `${x.turn2CachedTokens} | ${(x.turn2TtftMs / x.turn1TtftMs).toFixed(3)} |`,
      );
    }
    notes.push(
      `${s.cache.turn1PromptTokens}-token first prompt: turn 2 with the snapshot cache ${(s.plain.turn2TtftMs / s.cache.turn2TtftMs).toFixed(1)}× faster ` +
        `than without (${s.cache.turn2TtftMs.toFixed(0)} vs ${s.plain.turn2TtftMs.toFixed(0)} ms); ` +
        `${s.cache.turn2PromptTokens - s.cache.turn2CachedTokens} of its ${s.cache.turn2PromptTokens} prompt tokens prefilled.`,
    );
  }
  return [...lines, '', ...notes].join('\n');
}

async function main(): Promise<void> {
  const o = parseCli(process.argv.slice(2));
  const model = o.model ?? ensureCheckpoint('qwen35-bf16', { small: o.small, cacheDir: o.cacheDir, log }).path;
  const tokenizer = loadTokenizer(model);
  const count = (text: string) => tokenizer.encode(text).length;
  // Turn 2 holds turn 1's prompt, its answer and the follow-up; room to spare for the template.
  const maxSeqLen = Math.max(...o.promptTokens) + o.answerTokens + 256;
  log(
    `svc-bench hybrid-prefix: ${model}, ${o.threads} threads; first prompts ${o.promptTokens.join(', ')} tokens, ` +
      `answer ${o.answerTokens} tokens, ${o.reps} rep(s)`,
  );

  const servers = new Map<ConfigId, Awaited<ReturnType<typeof startSvcServer>>>();
  const results: LengthResult[] = o.promptTokens.map((p) => ({ promptTarget: p, runs: { cache: [], plain: [] } }));
  try {
    for (const c of CONFIGS) {
      const server = await startSvcServer(model, {
        repoRoot: REPO_ROOT,
        threads: o.threads,
        maxSeqLen,
        maxBatchSize: 1,
        extraArgs: [...c.args, ...o.svcArgs],
        startupTimeoutMs: 10 * 60_000,
        log,
      });
      servers.set(c.id, server);
      log(`  ${c.label}: ready in ${(server.load.ms / 1000).toFixed(1)} s at ${server.url}`);
      // A short conversation first, not measured: a server's first requests pay one-time costs (JIT, first allocations).
      await conversation(server.url, firstMessage(256, 1, count), o.answerTokens);
    }
    for (let rep = 0; rep < o.reps; rep++) {
      // Alternate which server goes first, so drifting machine load falls on both.
      const order = rep % 2 === 0 ? CONFIGS : [...CONFIGS].reverse();
      for (const r of results) {
        const first = firstMessage(r.promptTarget, 1000 * r.promptTarget + rep, count);
        for (const c of order) {
          const conv = await conversation(servers.get(c.id)!.url, first, o.answerTokens);
          r.runs[c.id].push(conv);
          log(
            `  rep ${rep + 1} P=${r.promptTarget} ${c.label}: turn 1 ${conv.turn1.promptTokens} tok TTFT ${conv.turn1.ttftMs.toFixed(0)} ms ` +
              `(cached ${conv.turn1.cachedTokens}); turn 2 ${conv.turn2.promptTokens} tok TTFT ${conv.turn2.ttftMs.toFixed(0)} ms ` +
              `(cached ${conv.turn2.cachedTokens})`,
          );
        }
      }
    }
  } finally {
    await Promise.all([...servers.values()].map((s) => stopServer(s.child)));
  }

  const md = [
    `Hybrid prefix cache: ${model}`,
    `${o.threads} threads, answer ${o.answerTokens} tokens, median of ${o.reps} rep(s), alternating servers; ` +
      `TTFT = request start → first streamed token (HTTP, chat template).`,
    '',
    table(results),
  ].join('\n');
  process.stdout.write(`\n${md}\n`);
  mkdirSync(dirname(o.out), { recursive: true });
  const summary = {
    generatedAt: new Date().toISOString(),
    model,
    settings: {
      threads: o.threads,
      promptTokens: o.promptTokens,
      answerTokens: o.answerTokens,
      reps: o.reps,
      maxSeqLen,
      svcArgs: o.svcArgs,
      configs: CONFIGS.map((c) => ({ id: c.id, label: c.label, args: c.args })),
    },
    machine: machineInfo(),
    results: results.map((r) => ({
      ...r,
      median: Object.fromEntries(CONFIGS.map((c) => [c.id, summarize(r, c.id)])),
    })),
  };
  writeFileSync(o.out, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(o.out.replace(/\.json$/, '.md'), `${md}\n`);
  log(`\nwrote ${o.out}`);
}

main().catch((err: Error) => {
  process.stderr.write(`hybrid-prefix bench: ${err.message}\n`);
  process.exitCode = 1;
});
