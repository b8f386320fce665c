// `npm run bench -- --agent` (or `node dist/bench/agent-trace.js`): a replayed coding-agent trace
// against `svc serve`, with and without --enable-prefix-caching. The trace is what an agent sends:
// a system prompt with tool definitions (~2k tokens), then turn after turn the whole conversation
// again — the assistant's tool calls and the tools' results appended each time. Each turn is one
// /v1/chat/completions request for a single token, so its time is the time to first token. From
// turn 2 on, with the cache, only the tokens new since the last turn should be prefilled.
//
//   node dist/bench/agent-trace.js [--model PATH] [--small] [--turns N] [--threads N] [--reps N] [--svc-args "..."]
//   node dist/bench/agent-trace.js --url http://127.0.0.1:8888 [--turns N]    (one trace against a running server)
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCheckpoint } from './gen-checkpoints.js';
import { stopServer } from './server-process.js';
import { startSvcServer } from './svc.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

type Message =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };
interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

const param = (type: string, description: string) => ({ type, description });

/** Eight coding-agent tools, described at the length real agents describe them. */
const TOOLS = [
  [
    'read_file',
    "Read a file from the repository. Returns the text with line numbers. Use it before editing a file; never guess a file's contents. Large files are cut at 2000 lines: pass offset and limit to read further.",
    {
      path: param('string', 'Path relative to the repository root.'),
      offset: param('integer', 'First line to read, 1-based.'),
      limit: param('integer', 'Most lines to return.'),
    },
  ],
  [
    'write_file',
    'Create or overwrite a file with the given content. Prefer apply_patch for small changes to existing files; use this for new files or complete rewrites. Parent directories are created as needed.',
    { path: param('string', 'Path relative to the repository root.'), content: param('string', 'The complete new content of the file.') },
  ],
  [
    'apply_patch',
    'Apply a unified diff to the working tree. The patch must apply cleanly against the current files; on failure nothing is changed and the rejected hunks are returned so that you can read the file again and retry with a corrected patch.',
    { patch: param('string', 'A unified diff with a/ and b/ prefixes.') },
  ],
  [
    'list_dir',
    'List the entries of a directory, with a trailing slash on subdirectories. Hidden files are included. Use it to find your way around an unfamiliar repository before reading files.',
    { path: param('string', 'Directory relative to the repository root.'), depth: param('integer', 'How many levels to descend, 1 to 3.') },
  ],
  [
    'search_code',
    'Search the repository for a regular expression (ripgrep syntax) and return the matching lines with their paths and line numbers, at most 200 matches. Use it to find definitions, callers and tests.',
    {
      pattern: param('string', 'The regular expression.'),
      glob: param('string', 'Only files matching this glob, e.g. src/**/*.ts.'),
      case_sensitive: param('boolean', 'Match case exactly.'),
    },
  ],
  [
    'run_shell',
    'Run a shell command in the repository root and return its exit status, standard output and standard error (each cut at 20000 characters). Commands time out after 120 seconds. Do not start servers or interactive programs.',
    {
      command: param('string', 'The command line, run with bash -lc.'),
      timeout_s: param('integer', 'Seconds before the command is killed.'),
    },
  ],
  [
    'run_tests',
    "Run the project's test suite or a subset of it and return a summary: passed, failed and skipped counts, and for each failure its name, message and the first lines of its stack.",
    {
      filter: param('string', 'Only tests whose file path contains this text.'),
      update_snapshots: param('boolean', 'Rewrite snapshot files instead of comparing.'),
    },
  ],
  [
    'git_diff',
    'Show the uncommitted changes of the working tree as a unified diff, optionally for some paths only. Use it before finishing to review everything you changed.',
    {
      paths: { type: 'array', items: { type: 'string' }, description: 'Paths to limit the diff to.' },
      staged: param('boolean', 'Show staged changes instead.'),
    },
  ],
].map(([name, description, properties]) => ({
  type: 'function' as const,
  function: {
    name: name as string,
    description: description as string,
    parameters: { type: 'object', properties, required: Object.keys(properties as object).slice(0, 1) },
  },
}));

const SYSTEM =
  'You are a coding agent working in a TypeScript repository. You make changes by calling tools; you never claim to have done ' +
  'something you did not do with a tool. Work in small steps: read before you write, run the tests after every change, and keep ' +
  "the diff minimal. Follow the repository's style: strict TypeScript, ESM imports with .js extensions, two-space indentation, " +
  'single quotes, and a short comment above anything whose reason is not obvious. Never commit secrets, never disable a test to ' +
  'make it pass, and never edit generated files. When a tool fails, read its error and adapt instead of repeating the same call. ' +
  'When you are done, summarize what you changed and why in two or three sentences, and list the files you touched.\n\n' +
  Array.from(
    { length: 6 },
    (_, i) =>
      `Rule ${i + 1}: ` +
      'Prefer the existing helpers in src/common over new utilities; keep each function under fifty lines; name things by what they are. ',
  ).join('');

/** A plausible tool result of about `lines` lines. */
function toolResult(turn: number, lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `${String(i + 1).padStart(4)}  const value${turn}_${i} = compute(input${i}, { mode: 'strict', retries: ${i % 4} });`,
  ).join('\n');
}

const CALLS: [string, Record<string, unknown>][] = [
  ['list_dir', { path: 'src', depth: 2 }],
  ['search_code', { pattern: 'parseConfig\\(', glob: 'src/**/*.ts' }],
  ['read_file', { path: 'src/config/parse.ts' }],
  ['read_file', { path: 'test/config.test.ts', limit: 120 }],
  [
    'apply_patch',
    {
      patch:
        '--- a/src/config/parse.ts\n+++ b/src/config/parse.ts\n@@ -10,3 +10,4 @@\n-  return raw;\n+  if (raw === undefined) return defaults;\n+  return { ...defaults, ...raw };\n',
    },
  ],
  ['run_tests', { filter: 'config' }],
  ['read_file', { path: 'src/config/defaults.ts' }],
  [
    'apply_patch',
    { patch: '--- a/src/config/defaults.ts\n+++ b/src/config/defaults.ts\n@@ -1,2 +1,3 @@\n export const defaults = {\n+  retries: 3,\n' },
  ],
  ['run_tests', {}],
  ['git_diff', {}],
];

/** The conversation as sent at turn `t` (1-based): the task, then t - 1 tool calls with their results. */
function conversation(t: number): Message[] {
  const messages: Message[] = [
    { role: 'system', content: SYSTEM },
    {
      role: 'user',
      content: 'parseConfig crashes when the config file has no "retries" key. Fix it, add a default of 3, and make sure the tests pass.',
    },
  ];
  for (let i = 0; i < t - 1; i++) {
    const [name, args] = CALLS[i % CALLS.length];
    const id = `call_${i}`;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: toolResult(i, 8 + ((i * 7) % 25)) });
  }
  return messages;
}

interface Turn {
  turn: number;
  promptTokens: number;
  cachedTokens: number;
  ttftMs: number;
}

async function runTrace(url: string, turns: number): Promise<Turn[]> {
  const out: Turn[] = [];
  for (let t = 1; t <= turns; t++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench', messages: conversation(t), tools: TOOLS, max_tokens: 1, temperature: 0, ignore_eos: true }),
    });
    const body = (await res.json()) as {
      usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
      error?: unknown;
    };
    const ttftMs = performance.now() - t0;
    if (!res.ok || !body.usage) throw new Error(`turn ${t}: HTTP ${res.status} ${JSON.stringify(body)}`);
    out.push({
      turn: t,
      promptTokens: body.usage.prompt_tokens,
      cachedTokens: body.usage.prompt_tokens_details?.cached_tokens ?? 0,
      ttftMs,
    });
  }
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const get = (flag: string) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const small = args.includes('--small');
  const turns = Number(get('--turns') ?? 10);
  const reps = Number(get('--reps') ?? 1);
  const threads = Number(get('--threads') ?? process.env.SVC_THREADS ?? availableParallelism());
  const extra = (get('--svc-args') ?? '').split(/\s+/).filter(Boolean);
  const log = (line: string) => console.log(line);
  const url = get('--url');
  if (url !== undefined) {
    // A server already running: one trace against it, as it is configured.
    for (const t of await runTrace(url, turns)) console.log(JSON.stringify(t));
    return;
  }
  const model = get('--model') ?? ensureCheckpoint('qwen3-q8_0', { small, log }).path;
  const results: Record<string, Turn[][]> = {};
  for (const [label, flags] of [
    ['no prefix cache', []],
    ['--enable-prefix-caching', ['--enable-prefix-caching']],
  ] as const) {
    results[label] = [];
    for (let r = 0; r < reps; r++) {
      const { child, url } = await startSvcServer(model, {
        repoRoot: REPO_ROOT,
        threads,
        maxSeqLen: 16384,
        maxBatchSize: 1,
        extraArgs: [...flags, ...extra],
        startupTimeoutMs: 300_000,
        log,
      });
      try {
        results[label].push(await runTrace(url, turns));
      } finally {
        await stopServer(child);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const [plain, cached] = Object.values(results);
  console.log(`\nAgent trace: ${model}, ${threads} threads, ${turns} turns, median of ${reps} run(s); time to first token per turn\n`);
  console.log('| turn | prompt tokens | new since last turn | TTFT, no cache (ms) | TTFT, prefix cache (ms) | cached tokens | ratio |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  for (let t = 0; t < turns; t++) {
    const a = median(plain.map((run) => run[t].ttftMs));
    const b = median(cached.map((run) => run[t].ttftMs));
    const p = cached[0][t];
    const fresh = t === 0 ? p.promptTokens : p.promptTokens - cached[0][t - 1].promptTokens;
    console.log(
      `| ${t + 1} | ${p.promptTokens} | ${fresh} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${p.cachedTokens} | ${(b / a).toFixed(2)} |`,
    );
  }
  const out = resolve(REPO_ROOT, 'bench', 'results', small ? 'agent-trace-small.json' : 'agent-trace.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ model, threads, turns, reps, results }, null, 2) + '\n');
  console.log(`\nwrote ${out}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
