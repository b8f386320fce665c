// Speculative decoding, measured end to end: for each drafter (none, n-gram, self-speculative) a
// real `svc serve` runs the same greedy requests — copy/edit tasks and agent tasks (tool calls,
// answers from tool results), where drafting shines, and open prose — one at a time; reported per task kind: acceptance (accepted ÷ drafted), tokens per
// verify step (1 + accepted ÷ verify steps), and decode tok/s (streamed: the tokens after the
// first over the time from the first to the last) against no drafter (median of --reps, runs of
// the drafters alternating). Models: svc-tiny-chat (chat completions) and the
// quant-zoo stories model (completions).
//
// These tiny models are not memory-bound (the stories model is 1 MB), so their wall-clock gain is
// not what a real model gets: the estimated speedup applies the measured acceptance to the cost of
// a verify step of that many rows on a bench checkpoint (verify-cost.ts, --cost-checkpoint):
// tokens ÷ (plain steps + Σ verify steps × cost(K)) — for the n-gram drafter, whose drafts cost no
// forward pass (the self and MTP drafters' own passes show in the measured speedup only).
//
//   node dist/bench/speculative.js [--drafters none,ngram,self] [--num-drafts 4] [--reps 3]
//                                   [--max-tokens 96] [--models tiny-chat,stories]
//                                   [--cost-checkpoint qwen3-q8_0]
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startSvcServer } from './svc.js';
import { stopServer } from './server-process.js';
import { median } from './measure.js';
import { forEachSseData } from './sse.js';
import { measure as measureVerifyCost } from './verify-cost.js';
import { ensureCheckpoint } from './gen-checkpoints.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS_DIR = resolve(REPO_ROOT, '..', 'shared', 'models');

const DRAFTER_FLAGS: Record<string, string[]> = {
  none: [],
  ngram: ['--ngram-speculative'],
  self: ['--self-speculative'],
  mtp: ['--speculative'],
};

interface Task {
  kind: TaskKind;
  /** Chat models get a user message; completion models a text prompt. */
  text: string;
  /** Agent tasks: the conversation before it (tool calls and results) and the tools offered. */
  history?: unknown[];
  tools?: unknown[];
}

/**
 * copy/edit: repeat or edit text in the prompt; agent: tool calls and answers from tool results,
 * which copy names and values from the context; prose: open text.
 */
const TASK_KINDS = ['copy/edit', 'agent', 'prose'] as const;
type TaskKind = (typeof TASK_KINDS)[number];

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
};
const EMAIL_TOOL = {
  type: 'function',
  function: {
    name: 'send_email',
    description: 'Send an email.',
    parameters: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
    },
  },
};
/** An email call that failed, before the user asks again: the retry copies the call. */
const FAILED_EMAIL = [
  {
    role: 'user',
    content: 'Send an email to alice@example.com with the subject Meeting notes and the body The meeting moved to Thursday at three.',
  },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: 'e1',
        type: 'function',
        function: {
          name: 'send_email',
          arguments: '{"to": "alice@example.com", "subject": "Meeting notes", "body": "The meeting moved to Thursday at three."}',
        },
      },
    ],
  },
  { role: 'tool', tool_call_id: 'e1', content: '{"error": "temporary failure, please retry"}' },
];
/** A weather call and its result, before the model answers from the result. */
const WEATHER_ROUND = [
  { role: 'user', content: 'What is the weather in Paris?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
  },
  {
    role: 'tool',
    tool_call_id: 'c1',
    content: '{"city": "Paris", "temperature": 18, "unit": "celsius", "condition": "sunny", "humidity": 40}',
  },
];

interface BenchModel {
  name: string;
  path: string;
  endpoint: 'chat' | 'completions';
  tasks: Task[];
}

const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play in the park with her red ball. ' +
  'One day, she saw a big dog near the tree. The dog was friendly and wanted to play too.';

const MODELS: Record<string, BenchModel> = {
  'tiny-chat': {
    name: 'svc-tiny-chat',
    path: join(MODELS_DIR, 'svc-tiny-chat'),
    endpoint: 'chat',
    tasks: [
      { kind: 'copy/edit', text: 'Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river bank.' },
      { kind: 'copy/edit', text: 'Fix the misspelled keyword in this line of code: retrun total + count; retrun total + count;' },
      { kind: 'copy/edit', text: 'Write this in upper case: meet me at the station at noon, bring the map and the tickets.' },
      { kind: 'copy/edit', text: 'Sort this list: pear, apple, fig, banana, cherry, grape, date, kiwi, lemon, mango.' },
      { kind: 'agent', text: 'What is the weather in Madrid and in Lisbon?', tools: [WEATHER_TOOL] },
      {
        kind: 'agent',
        text: 'Email bob@example.com with the subject Lunch and the body See you at noon.',
        tools: [EMAIL_TOOL, WEATHER_TOOL],
      },
      { kind: 'agent', text: '', history: WEATHER_ROUND, tools: [WEATHER_TOOL] },
      {
        kind: 'agent',
        text: 'It failed. Send an email to alice@example.com with the subject Meeting notes and the body The meeting moved to Thursday at three.',
        history: FAILED_EMAIL,
        tools: [EMAIL_TOOL],
      },
      { kind: 'prose', text: 'What is the capital of France?' },
      { kind: 'prose', text: 'Tell me about the weather in spring.' },
      { kind: 'prose', text: 'What sound does a cow make, and why?' },
    ],
  },
  stories: {
    name: 'stories260k-wide-q8_0',
    path: join(MODELS_DIR, 'quant-zoo', 'stories260k-wide-q8_0.gguf'),
    endpoint: 'completions',
    tasks: [
      // The story told twice, then a third time from its start: the continuation can copy.
      { kind: 'copy/edit', text: `${STORY}\n\n${STORY}\n\nOnce upon a time, there was a little girl` },
      { kind: 'copy/edit', text: `${STORY} ${STORY} Once upon a time` },
      { kind: 'prose', text: 'Once upon a time' },
      { kind: 'prose', text: 'Lily went to the park' },
      { kind: 'prose', text: 'The little dog' },
    ],
  },
};

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

interface SpecCounters {
  drafted: number;
  accepted: number;
  verifies: number;
}

async function counters(url: string): Promise<SpecCounters> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    drafted: value('svc_spec_draft_tokens_total'),
    accepted: value('svc_spec_accepted_tokens_total'),
    verifies: value('svc_spec_verify_steps_total'),
  };
}

/** One greedy streamed request: its completion tokens, and the time from its first token to its last. */
async function run(url: string, model: BenchModel, task: Task, maxTokens: number): Promise<{ tokens: number; ms: number }> {
  // Chat turns end at the model's own end of turn; the base model runs to max_tokens.
  const body =
    model.endpoint === 'chat'
      ? {
          messages: task.history
            ? [...task.history, ...(task.text ? [{ role: 'user', content: task.text }] : [])]
            : [{ role: 'user', content: task.text }],
          ...(task.tools ? { tools: task.tools } : {}),
          chat_template_kwargs: { enable_thinking: false },
        }
      : { prompt: task.text, ignore_eos: true };
  const res = await fetch(`${url}/v1/${model.endpoint === 'chat' ? 'chat/completions' : 'completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ...body,
      model: 'm',
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let first = NaN;
  let last = NaN;
  let tokens = 0;
  await forEachSseData(res.body as AsyncIterable<Uint8Array>, (data) => {
    if (data === '[DONE]') return;
    const frame = JSON.parse(data) as {
      choices?: { delta?: { content?: string; tool_calls?: { function?: { arguments?: string; name?: string } }[] }; text?: string }[];
      usage?: { completion_tokens: number };
    };
    const delta = frame.choices?.[0]?.delta;
    // (A tool call's text may arrive in fewer, later events than its tokens: read agent rows by tokens per step.)
    const calls = delta?.tool_calls?.map((c) => `${c.function?.name ?? ''}${c.function?.arguments ?? ''}`).join('') ?? '';
    const text = (delta?.content ?? frame.choices?.[0]?.text ?? '') + calls;
    if (text) {
      last = performance.now();
      if (Number.isNaN(first)) first = last;
    }
    if (frame.usage) tokens = frame.usage.completion_tokens;
  });
  return { tokens, ms: last - first };
}

interface Row {
  model: string;
  drafter: string;
  kind: string;
  tokPerSec: number;
  /** Generated tokens, and the counters' growth over the same requests. */
  tokens: number;
  drafted: number;
  accepted: number;
  verifies: number;
}

/** Cost of a verify step of k rows in decode steps, linear between the measured ks. */
function costAt(costs: { k: number; ratio: number }[], k: number): number {
  const below = [...costs].reverse().find((c) => c.k <= k) ?? costs[0];
  const above = costs.find((c) => c.k >= k) ?? costs[costs.length - 1];
  if (above.k === below.k) return below.ratio;
  return below.ratio + ((above.ratio - below.ratio) * (k - below.k)) / (above.k - below.k);
}

async function main(): Promise<void> {
  const drafters = arg('drafters', 'none,ngram').split(',');
  const numDrafts = arg('num-drafts', '4');
  const reps = Number(arg('reps', '3'));
  const maxTokens = Number(arg('max-tokens', '96'));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const rows: Row[] = [];
  for (const key of arg('models', 'tiny-chat,stories').split(',')) {
    const model = MODELS[key];
    if (!model) throw new Error(`unknown model ${key} (known: ${Object.keys(MODELS).join(', ')})`);
    const servers = new Map<string, { url: string; stop: () => Promise<void> }>();
    for (const d of drafters) {
      const flags = DRAFTER_FLAGS[d];
      if (!flags) throw new Error(`unknown drafter ${d}`);
      const extraArgs = d === 'none' ? [] : [...flags, '--num-drafts', numDrafts];
      const { child, url } = await startSvcServer(model.path, {
        repoRoot: REPO_ROOT,
        threads: 2,
        maxSeqLen: 2048,
        maxBatchSize: 1,
        extraArgs,
        startupTimeoutMs: 120_000,
        log,
      });
      servers.set(d, { url, stop: () => stopServer(child) });
    }
    try {
      for (const kind of TASK_KINDS) {
        const tasks = model.tasks.filter((t) => t.kind === kind);
        if (tasks.length === 0) continue;
        const samples = new Map<string, { tokPerSec: number[]; tokens: number; before: SpecCounters; after: SpecCounters }>();
        for (const d of drafters) {
          const c = await counters(servers.get(d)!.url);
          samples.set(d, { tokPerSec: [], tokens: 0, before: c, after: c });
        }
        for (let r = 0; r < reps; r++) {
          for (const d of drafters) {
            let tokens = 0;
            let ms = 0;
            for (const task of tasks) {
              const res = await run(servers.get(d)!.url, model, task, maxTokens);
              tokens += res.tokens;
              ms += res.ms;
            }
            // The first token comes from the prefill step: the rate is of the ones after it.
            samples.get(d)!.tokPerSec.push(((tokens - tasks.length) / ms) * 1000);
            samples.get(d)!.tokens += tokens;
          }
        }
        for (const d of drafters) {
          const s = samples.get(d)!;
          s.after = await counters(servers.get(d)!.url);
          rows.push({
            model: model.name,
            drafter: d,
            kind,
            tokPerSec: median(s.tokPerSec),
            tokens: s.tokens,
            drafted: s.after.drafted - s.before.drafted,
            accepted: s.after.accepted - s.before.accepted,
            verifies: s.after.verifies - s.before.verifies,
          });
        }
      }
    } finally {
      for (const s of servers.values()) await s.stop();
    }
  }
  const costId = arg('cost-checkpoint', 'qwen3-q8_0');
  const ks = Array.from({ length: Number(numDrafts) + 1 }, (_, i) => i + 1).filter((k) => k > 1);
  const costs = measureVerifyCost(ensureCheckpoint(costId).path, ks, 256, 9);
  console.log(`num-drafts ${numDrafts}, max_tokens ${maxTokens}, greedy, one request at a time, median of ${reps}`);
  console.log(`verify step cost on ${costId}: ${costs.map((c) => `K=${c.k} ${c.ratio.toFixed(2)}×`).join(', ')}`);
  console.log(
    '| model | tasks | drafter | accepted / drafted | tokens per verify step | tokens per step | est. speedup | tok/s | × none |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const base = rows.find((b) => b.model === r.model && b.kind === r.kind && b.drafter === 'none');
    const measured = base ? (r.tokPerSec / base.tokPerSec).toFixed(2) : '';
    const drafting = r.verifies > 0;
    const pct = drafting ? `${((r.accepted / r.drafted) * 100).toFixed(0)}%` : '–';
    const perVerify = drafting ? (1 + r.accepted / r.verifies).toFixed(2) : '–';
    // Every step yields one token of its own plus the draft tokens accepted in it.
    const steps = r.tokens - r.accepted;
    const perStep = steps > 0 ? (r.tokens / steps).toFixed(2) : '–';
    const cost = drafting ? steps - r.verifies + r.verifies * costAt(costs, 1 + r.drafted / r.verifies) : steps;
    // Only the n-gram drafter drafts for free; the others' own passes are in the measured column alone.
    const estimate = steps > 0 && (r.drafter === 'none' || r.drafter === 'ngram') ? (r.tokens / cost).toFixed(2) : '–';
    console.log(
      `| ${r.model} | ${r.kind} | ${r.drafter} | ${pct} | ${perVerify} | ${perStep} | ${estimate} | ${r.tokPerSec.toFixed(1)} | ${measured} |`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
