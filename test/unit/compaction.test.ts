// Context auto-compaction (--auto-compact): the pure part (segments that keep a tool call with its
// results, which turns stay, where the note goes, middle-elision, the transcript cuts), the
// orchestration over svc-tiny-chat's real tokenizer and template with a scripted engine (summary
// job, fallbacks, the too-long error), and the routes (header on every chat protocol, JSON and
// SSE; the log line; off by default).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildChatPromptCompacting, compactionSizes, MIN_TOOL_OUTPUT_CHARS } from '../../src/chat/auto-compact.js';
import {
  capToCut,
  compactConversation,
  compactionNote,
  elideMiddle,
  elisionMarker,
  keepRecent,
  largestFitting,
  minimumRecent,
  removedMessages,
  segmentConversation,
  truncateToolOutputs,
} from '../../src/chat/compaction.js';
import { fitEntries, MIN_ENTRY_CHARS, transcriptEntry } from '../../src/chat/compaction-summary.js';
import { prefixKeys, SummaryCache } from '../../src/chat/summary-cache.js';
import type { ChatMessage, ChatRequest } from '../../src/chat/request.js';
import { ApiError } from '../../src/common/api-error.js';
import { EngineAdmissionError } from '../../src/engine/types.js';
import { COMPACTED_HEADER } from '../../src/server/chat-prompt.js';
import { scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';

const SYSTEM: ChatMessage = { role: 'system', content: 'You are a helpful assistant with file tools.' };
const TASK: ChatMessage = { role: 'user', content: 'Read the log files one by one and tell me which one has an error.' };

function logText(i: number, lines: number): string {
  return Array.from({ length: lines }, (_, j) => `app${i} line ${j}: request served ok in ${j * 3} ms`).join('\n');
}

/** A system prompt, one task, then `exchanges` assistant tool calls each answered by a long tool result. */
function toolLoop(exchanges: number, lines = 10): ChatMessage[] {
  const messages = [SYSTEM, TASK];
  for (let i = 0; i < exchanges; i++) {
    const id = `call_${i}`;
    const args = JSON.stringify({ path: `/var/log/app${i}.log` });
    messages.push({
      role: 'assistant',
      content: null,
      toolCalls: [{ id, type: 'function', function: { name: 'read_file', arguments: args } }],
    });
    messages.push({ role: 'tool', toolCallId: id, name: 'read_file', content: logText(i, lines) });
  }
  return messages;
}

const READ_FILE = {
  type: 'function' as const,
  function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
};

function chatRequest(messages: ChatMessage[]): ChatRequest {
  return {
    messages,
    tools: [READ_FILE],
    toolChoice: 'auto',
    parallelToolCalls: true,
    chatTemplateKwargs: {},
    sampling: { temperature: 1, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null },
    maxTokens: null,
    stop: [],
    stopTokenIds: [],
    ignoreEos: false,
    n: 1,
    logprobs: null,
    skipSpecialTokens: true,
    stream: false,
    includeUsage: false,
  };
}

/** Every tool result follows the assistant turn that made its call, and every call has its result. */
function assertPairsWhole(messages: readonly ChatMessage[]): void {
  let pending = null as Set<string> | null;
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      assert.ok(pending?.delete(m.toolCallId!), `message ${i}: a tool result without its call`);
      continue;
    }
    assert.equal(pending?.size ?? 0, 0, `message ${i}: a call without its result`);
    pending = m.role === 'assistant' && m.toolCalls ? new Set(m.toolCalls.map((c) => c.id)) : null;
  }
  assert.equal(pending?.size ?? 0, 0, 'the last call has no result');
}

// ---------------------------------------------------------------------------------------------
// Segments and the kept turns

test('segments: an assistant turn with tool calls keeps its results; system, developer and the latest user message are pinned', () => {
  const messages: ChatMessage[] = [
    SYSTEM,
    { role: 'user', content: 'first' },
    { role: 'assistant', content: 'ok' },
    { role: 'developer', content: 'be brief' },
    TASK,
    ...toolLoop(2).slice(2),
    { role: 'assistant', content: 'done' },
  ];
  const segments = segmentConversation(messages);
  assert.deepEqual(
    segments.map((s) => [s.messages.map((m) => m.role).join('+'), s.pinned]),
    [
      ['system', true],
      ['user', false],
      ['assistant', false],
      ['developer', true],
      ['user', true],
      ['assistant+tool', false],
      ['assistant+tool', false],
      ['assistant', false],
    ],
  );
  assert.deepEqual(
    segments.flatMap((s) => s.messages),
    messages,
  );
  // Parallel calls: every result stays with the turn.
  const parallel: ChatMessage[] = [
    TASK,
    {
      role: 'assistant',
      content: null,
      toolCalls: ['a', 'b'].map((id) => ({ id, type: 'function' as const, function: { name: 'f', arguments: '{}' } })),
    },
    { role: 'tool', toolCallId: 'a', content: 'A' },
    { role: 'tool', toolCallId: 'b', content: 'B' },
  ];
  assert.deepEqual(
    segmentConversation(parallel).map((s) => s.messages.length),
    [1, 3],
  );
});

test('keepRecent and minimumRecent: pinned segments always, then the newest others; the exchange after the request is the least kept', () => {
  const segments = segmentConversation(toolLoop(4));
  assert.deepEqual(keepRecent(segments, 0), [true, true, false, false, false, false]);
  assert.deepEqual(keepRecent(segments, 2), [true, true, false, false, true, true]);
  assert.deepEqual(keepRecent(segments, 9), [true, true, true, true, true, true]);
  assert.equal(minimumRecent(segments), 1);
  // A conversation that ends with the user's message needs none of the others.
  assert.equal(minimumRecent(segmentConversation([SYSTEM, { role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, TASK])), 0);
  assert.equal(removedMessages(segments, keepRecent(segments, 2)).length, 4);
});

test('compactConversation: in a tool loop the note follows the request, merged into it; no call or result is ever left alone', () => {
  const messages = toolLoop(5);
  const segments = segmentConversation(messages);
  for (let recent = 0; recent <= 5; recent++) {
    const keep = keepRecent(segments, recent);
    const removed = removedMessages(segments, keep).length;
    const out = compactConversation(segments, keep, compactionNote('SUMMARY', removed, 0));
    assertPairsWhole(out);
    assert.deepEqual(out[0], SYSTEM);
    if (recent === 5) {
      assert.deepEqual(out, messages);
      continue;
    }
    // The request, then the note, as one user message; then the newest exchanges verbatim.
    assert.equal(out[1]!.role, 'user');
    assert.equal(
      out[1]!.content,
      `${TASK.content}\n\n[Context compacted: ${removed} earlier messages were replaced by the summary below.]\nSUMMARY`,
    );
    assert.deepEqual(out.slice(2), messages.slice(messages.length - 2 * recent));
  }
});

test('compactConversation: in a chat the note takes the oldest turns’ place, merged into the next user message, and the roles still alternate', () => {
  const turns: ChatMessage[] = [SYSTEM];
  for (let i = 0; i < 4; i++) turns.push({ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` });
  turns.push({ role: 'user', content: 'latest' });
  const segments = segmentConversation(turns);
  const out = compactConversation(segments, keepRecent(segments, 2), compactionNote(null, 0, 6));
  assert.deepEqual(
    out.map((m) => [m.role, m.content]),
    [
      ['system', SYSTEM.content],
      ['user', '[Context compacted: 6 earlier messages were left out.]\n\nq3'],
      ['assistant', 'a3'],
      ['user', 'latest'],
    ],
  );
  // Keeping only an assistant turn: the note stands alone before it.
  const out1 = compactConversation(segments, keepRecent(segments, 1), 'NOTE');
  assert.deepEqual(
    out1.map((m) => m.role),
    ['system', 'user', 'assistant', 'user'],
  );
  assert.equal(out1[1]!.content, 'NOTE');
});

test('compactionNote: summary, omission, or both', () => {
  assert.equal(compactionNote('S', 4, 0), '[Context compacted: 4 earlier messages were replaced by the summary below.]\nS');
  assert.equal(compactionNote(null, 0, 3), '[Context compacted: 3 earlier messages were left out.]');
  assert.equal(
    compactionNote('S', 4, 2),
    '[Context compacted: 4 earlier messages were replaced by the summary below; 2 more were left out.]\nS',
  );
});

// ---------------------------------------------------------------------------------------------
// Elision and cuts

test('elideMiddle: the head and the tail with a marker counting what went; short texts unchanged; no split surrogate pair', () => {
  assert.equal(elideMiddle('short', 10), 'short');
  const text = 'a'.repeat(50) + 'b'.repeat(100) + 'c'.repeat(50);
  assert.equal(elideMiddle(text, 100), `${'a'.repeat(50)}\n${elisionMarker(100)}\n${'c'.repeat(50)}`);
  assert.equal(elisionMarker(100), '[… 100 characters elided …]');
  const emoji = '😀'.repeat(100);
  const cut = elideMiddle(emoji, 51);
  assert.doesNotMatch(cut, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  assert.ok(cut.startsWith('😀') && cut.endsWith('😀'));
});

test('capToCut: the longest texts cut to a common length first, just enough', () => {
  assert.equal(capToCut([100, 50], 0), Infinity);
  assert.equal(capToCut([100, 50], 30), 70);
  assert.equal(capToCut([100, 50], 80), 35);
  assert.equal(capToCut([100, 50, 10], 130), 10);
  assert.equal(capToCut([100, 50], 200), 0);
  for (const [lengths, cut] of [
    [[300, 20, 180, 90], 250],
    [[5, 5, 5], 7],
  ] as const) {
    const cap = capToCut(lengths, cut);
    const removed = lengths.reduce((n, l) => n + Math.max(0, l - cap), 0);
    assert.ok(removed >= cut && removed - lengths.filter((l) => l > cap).length < cut, `${lengths}: cap ${cap} removes ${removed}`);
  }
});

test('truncateToolOutputs: only tool outputs over the cap, each middle-elided', () => {
  const messages = toolLoop(3, 40);
  const { messages: out, truncated } = truncateToolOutputs([...messages, { role: 'user', content: 'x'.repeat(5000) }], 300);
  assert.equal(truncated, 3);
  for (const m of out.filter((m) => m.role === 'tool')) {
    assert.match(m.content!, /\[… \d+ characters elided …\]/);
    assert.ok(m.content!.length < 300 + 40);
  }
  assert.equal(out.at(-1)!.content!.length, 5000);
  assert.deepEqual(out[2], messages[2]);
});

test('largestFitting: the largest k that fits, by halving; lo - 1 when none does', async () => {
  const tried: number[] = [];
  const fits = (limit: number) => async (k: number) => (tried.push(k), k <= limit);
  assert.equal(await largestFitting(0, 100, fits(37)), 37);
  assert.ok(tried.length <= 8);
  assert.equal(await largestFitting(1, 10, fits(0)), 0);
  assert.equal(await largestFitting(1, 10, fits(10)), 10);
  assert.equal(await largestFitting(3, 2, fits(10)), 2);
});

test('transcript entries: role labels, tool calls as name(arguments); fitEntries cuts the longest, then leaves the oldest out', () => {
  const loop = toolLoop(1, 3);
  assert.deepEqual(loop.map(transcriptEntry).slice(0, 3), [
    `System: ${SYSTEM.content}`,
    `User: ${TASK.content}`,
    'Assistant called read_file({"path":"/var/log/app0.log"})',
  ]);
  assert.match(transcriptEntry(loop[3]!), /^Tool result \(read_file\): app0 line 0/);
  const entries = ['x'.repeat(1000), 'y'.repeat(2000), 'z'.repeat(100)];
  assert.deepEqual(fitEntries(entries, 5000), entries);
  const cut = fitEntries(entries, 1500);
  assert.equal(cut.length, 3);
  assert.ok(cut.reduce((n, e) => n + e.length, 0) <= 1500 + 2 * 40);
  assert.equal(cut[2], entries[2]);
  // Below MIN_ENTRY_CHARS each, the oldest go.
  const dropped = fitEntries(entries, MIN_ENTRY_CHARS);
  assert.equal(dropped[0], '[… 2 earlier messages omitted …]');
  assert.equal(dropped.at(-1), entries[2]);
});

test('compactionSizes: threshold F × context (below the context), target 3/4 of it, less a strict max_tokens', () => {
  assert.deepEqual(compactionSizes(0.8, 1024, null), { threshold: 819, target: 614 });
  assert.deepEqual(compactionSizes(1, 1024, null), { threshold: 1023, target: 767 });
  assert.deepEqual(compactionSizes(0.8, 1024, 600), { threshold: 819, target: 423 });
  assert.deepEqual(compactionSizes(0.85, 32768, null), { threshold: 27852, target: 20889 });
});

// ---------------------------------------------------------------------------------------------
// The orchestration: svc-tiny-chat's tokenizer and template, a scripted engine, a 1024-token context

const SETTINGS = { fraction: 0.8, reserveTokens: null, timeoutSec: 30 };
const CONTEXT = 1024;

/** The scripted app with a 1024-token context (the scripted engine does not check lengths). */
function compactingApp(...args: Parameters<typeof scriptedApp>) {
  const built = scriptedApp(...args);
  built.runtime.maxSeqLen = CONTEXT;
  return built;
}

test('under the threshold: the request as it is, no report, no summary job', async () => {
  const { runtime, engine } = compactingApp();
  const req = chatRequest(toolLoop(1, 3));
  const r = await buildChatPromptCompacting(req, runtime, SETTINGS);
  assert.equal(r.report, null);
  assert.equal(r.request, req);
  assert.equal(engine.jobs.length, 0);
});

test("a strict max_tokens that fills the context alone: no compaction, today's errors", async () => {
  const { runtime, engine } = compactingApp();
  const settings = { ...SETTINGS, reserveTokens: CONTEXT };
  // Countable: the request as it is (the route's max_tokens check then refuses it, as today).
  const over = await buildChatPromptCompacting(chatRequest(toolLoop(12)), runtime, settings);
  assert.equal(over.report, null);
  assert.ok(over.prompt.tokens.length > CONTEXT);
  // Longer than 8 × the context: the prompt's own 400.
  await assert.rejects(buildChatPromptCompacting(chatRequest(toolLoop(60)), runtime, settings), /maximum context length is 1024 tokens/);
  assert.equal(engine.jobs.length, 0);
});

test('a long tool loop: the oldest exchanges summarized by the model (greedy, no tools, thinking off), the newest kept whole, under the target', async () => {
  const { runtime, engine } = compactingApp({ script: { ids: [...tinyTokenizer.encode('Logs 0-5 were clean.'), 151645] } });
  const messages = toolLoop(12);
  const r = await buildChatPromptCompacting(chatRequest(messages), runtime, SETTINGS);
  const report = r.report!;
  const { target } = compactionSizes(0.8, runtime.maxSeqLen, null);
  assert.ok(report.exactBefore && report.tokensBefore > runtime.maxSeqLen, JSON.stringify(report));
  assert.ok(report.tokensAfter <= target, JSON.stringify(report));
  assert.equal(report.tokensAfter, r.prompt.tokens.length);
  assert.ok(report.summarizedMessages >= 2 && report.summarizedMessages % 2 === 0);
  assert.equal(report.summarizedTurns, report.summarizedMessages / 2);
  assert.equal(report.omittedMessages, 0);
  assert.equal(report.truncatedToolOutputs, 0);
  assert.equal(report.summaryError, null);
  const out = r.request.messages;
  assertPairsWhole(out);
  assert.deepEqual(out[0], SYSTEM);
  assert.equal(
    out[1]!.content,
    `${TASK.content}\n\n[Context compacted: ${report.summarizedMessages} earlier messages were replaced by the summary below.]\nLogs 0-5 were clean.`,
  );
  assert.deepEqual(out.slice(2), messages.slice(2 + report.summarizedMessages));
  assert.ok(out.length >= 4, 'the newest exchange stays');
  // The prompt is the compacted conversation's, tools included.
  assert.match(r.prompt.text, /<tools>/);
  assert.match(r.prompt.text, /Logs 0-5 were clean\./);
  // The summary job: greedy, bounded, over a transcript of the removed turns only, with no tools and an empty think block.
  assert.equal(engine.jobs.length, 1);
  const job = engine.jobs[0]!.req;
  assert.equal(job.sampling.temperature, 0);
  assert.ok(job.maxTokens <= Math.floor(target / 4));
  const summaryPrompt = tinyTokenizer.decode(job.promptTokens);
  // Cut to fit the context with room for the summary: the longest entries elided, the oldest left out.
  assert.match(summaryPrompt, /Assistant called read_file\(\{"path":"\/var\/log\/app\d+\.log"\}\)/);
  assert.ok(job.promptTokens.length + job.maxTokens <= CONTEXT);
  assert.doesNotMatch(summaryPrompt, /app11\.log/);
  assert.doesNotMatch(summaryPrompt, /<tools>/);
  assert.match(summaryPrompt, /<think>\s*<\/think>\s*$/);
});

test('summary cache: least recently used goes first; prefix keys stay the same as a conversation grows', () => {
  const cache = new SummaryCache(2);
  cache.set('a', { text: 'A', tokens: 1 });
  cache.set('b', { text: 'B', tokens: 1 });
  cache.get('a');
  cache.set('c', { text: 'C', tokens: 1 });
  assert.deepEqual([cache.peek('a')?.text, cache.peek('b'), cache.peek('c')?.text], ['A', undefined, 'C']);
  const short = prefixKeys(segmentConversation(toolLoop(3)));
  const long = prefixKeys(segmentConversation(toolLoop(5)));
  assert.equal(short.length, 3);
  assert.deepEqual(long.slice(0, 3), short);
  assert.equal(new Set(long).size, long.length);
  // A new user message: the old one becomes a compactable segment, and every key after it differs.
  const moved = prefixKeys(segmentConversation([...toolLoop(3), { role: 'user', content: 'and now?' }]));
  assert.equal(moved.length, 4);
  assert.ok(!moved.some((k) => short.includes(k)));
});

test('an agent resending its history: the summary is reused while the rest fits the threshold (same prompt start), then continued', async () => {
  const { runtime, engine } = compactingApp({ script: { ids: [...tinyTokenizer.encode('S1.'), 151645] } });
  const messages = toolLoop(12);
  const first = await buildChatPromptCompacting(chatRequest(messages), runtime, SETTINGS);
  assert.equal(first.report!.summaryReused, false);
  assert.equal(engine.jobs.length, 1);
  // One more exchange: the same oldest turns, the same summary, no new job; the prompt starts the same.
  const second = await buildChatPromptCompacting(chatRequest(toolLoop(13)), runtime, SETTINGS);
  const r2 = second.report!;
  assert.equal(r2.summaryReused, true);
  assert.equal(r2.summarizedMessages, first.report!.summarizedMessages);
  assert.equal(r2.summaryError, null);
  assert.ok(r2.tokensAfter <= r2.threshold && r2.tokensAfter > first.report!.tokensAfter);
  assert.equal(engine.jobs.length, 1);
  assert.deepEqual(second.request.messages.slice(0, 2), first.request.messages.slice(0, 2));
  assert.deepEqual(
    second.prompt.tokens.slice(0, first.prompt.tokens.length - 200),
    first.prompt.tokens.slice(0, first.prompt.tokens.length - 200),
  );
  // Grown past the threshold: a new summary, written from the last one and the turns after it.
  let n = 14;
  let third = await buildChatPromptCompacting(chatRequest(toolLoop(n)), runtime, SETTINGS);
  while (third.report!.summaryReused && n < 30) third = await buildChatPromptCompacting(chatRequest(toolLoop(++n)), runtime, SETTINGS);
  assert.equal(third.report!.summaryReused, false);
  assert.ok(third.report!.summarizedMessages > first.report!.summarizedMessages);
  assert.equal(engine.jobs.length, 2);
  const continued = tinyTokenizer.decode(engine.jobs[1]!.req.promptTokens);
  assert.match(continued, /System: Summary of the conversation before: S1\./);
  assert.doesNotMatch(continued, /app0\.log/);
});

test('the engine refuses the summary job: the oldest exchanges are left out instead, with a note saying so', async () => {
  const { runtime, engine } = compactingApp();
  engine.refuse = new EngineAdmissionError('queue_full', 'the queue is full');
  const r = await buildChatPromptCompacting(chatRequest(toolLoop(12)), runtime, SETTINGS);
  const report = r.report!;
  assert.equal(report.summarizedMessages, 0);
  assert.ok(report.omittedMessages >= 2);
  assert.match(report.summaryError!, /refused the summary job: the queue is full/);
  assert.ok(report.tokensAfter <= compactionSizes(0.8, runtime.maxSeqLen, null).target);
  assertPairsWhole(r.request.messages);
  assert.match(
    r.request.messages[1]!.content!,
    new RegExp(`\\[Context compacted: ${report.omittedMessages} earlier messages were left out\\.\\]$`),
  );
});

test('one tool output longer than the context: middle-elided, never dropped with its call', async () => {
  const { runtime, engine } = compactingApp();
  const messages = toolLoop(1, 600);
  const r = await buildChatPromptCompacting(chatRequest(messages), runtime, SETTINGS);
  const report = r.report!;
  assert.equal(report.truncatedToolOutputs, 1);
  assert.equal(report.summarizedMessages + report.omittedMessages, 0);
  assert.equal(engine.jobs.length, 0);
  const out = r.request.messages;
  assert.equal(out.length, 4);
  assertPairsWhole(out);
  const tool = out[3]!.content!;
  assert.match(tool, /\[… \d+ characters elided …\]/);
  assert.ok(tool.startsWith(messages[3]!.content!.slice(0, 100)) && tool.endsWith(messages[3]!.content!.slice(-100)));
  assert.ok(tool.length >= MIN_TOOL_OUTPUT_CHARS);
  assert.ok(report.tokensAfter < runtime.maxSeqLen);
});

test('what cannot be compacted (a user message longer than the context) is still 400 context_length_exceeded', async () => {
  const { runtime } = compactingApp();
  const req = chatRequest([SYSTEM, { role: 'user', content: 'word '.repeat(3000) }]);
  await assert.rejects(buildChatPromptCompacting(req, runtime, SETTINGS), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'context_length_exceeded');
    assert.match(err.message, /maximum context length is 1024 tokens\. However, your prompt is 3\d{3} tokens/);
    return true;
  });
});

// ---------------------------------------------------------------------------------------------
// The routes

/** The tool loop as each protocol sends it. */
function wireBodies(exchanges: number) {
  const loop = toolLoop(exchanges).slice(2);
  const openai = {
    model: 'm',
    max_tokens: 16,
    tools: [READ_FILE],
    messages: [
      { role: 'system', content: SYSTEM.content },
      { role: 'user', content: TASK.content },
      ...loop.map((m) =>
        m.role === 'tool'
          ? { role: 'tool', tool_call_id: m.toolCallId, content: m.content }
          : { role: 'assistant', content: null, tool_calls: m.toolCalls },
      ),
    ],
  };
  const anthropic = {
    model: 'm',
    max_tokens: 16,
    system: SYSTEM.content,
    tools: [{ name: 'read_file', input_schema: READ_FILE.function.parameters }],
    messages: [
      { role: 'user', content: TASK.content },
      ...loop.map((m) =>
        m.role === 'tool'
          ? { role: 'user', content: [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }] }
          : {
              role: 'assistant',
              content: m.toolCalls!.map((c) => ({
                type: 'tool_use',
                id: c.id,
                name: c.function.name,
                input: JSON.parse(c.function.arguments) as object,
              })),
            },
      ),
    ],
  };
  const responses = {
    model: 'm',
    max_output_tokens: 16,
    instructions: SYSTEM.content,
    tools: [{ type: 'function', name: 'read_file', parameters: READ_FILE.function.parameters }],
    input: [
      { role: 'user', content: TASK.content },
      ...loop.map((m) =>
        m.role === 'tool'
          ? { type: 'function_call_output', call_id: m.toolCallId, output: m.content }
          : { type: 'function_call', call_id: m.toolCalls![0]!.id, name: 'read_file', arguments: m.toolCalls![0]!.function.arguments },
      ),
    ],
  };
  return { openai, anthropic, responses };
}

const HEADER_VALUE = /^(\d+) -> (\d+); summarized=(\d+); omitted=0; truncated=0$/;

test('routes: every chat protocol, JSON and SSE, says it was compacted in the header; one log line with the request id', async () => {
  const { app, lines } = compactingApp({ options: { autoCompact: 0.8 } });
  const bodies = wireBodies(12);
  const cases: [string, object][] = [
    ['/v1/chat/completions', bodies.openai],
    ['/v1/chat/completions', { ...bodies.openai, stream: true }],
    ['/v1/messages', bodies.anthropic],
    ['/v1/messages', { ...bodies.anthropic, stream: true }],
    ['/v1/responses', bodies.responses],
    ['/v1/responses', { ...bodies.responses, stream: true }],
  ];
  for (const [url, payload] of cases) {
    const res = await app.inject({ method: 'POST', url, payload });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    const m = HEADER_VALUE.exec(String(res.headers[COMPACTED_HEADER]));
    assert.ok(m, `${url}: ${String(res.headers[COMPACTED_HEADER])}`);
    assert.ok(Number(m[1]) > CONTEXT && Number(m[2]) <= compactionSizes(0.8, CONTEXT, null).target && Number(m[3]) > 0);
    const logged = lines.filter((l) => l.msg === 'context compacted').at(-1)!;
    assert.equal(typeof logged.reqId, 'string');
    assert.equal(logged.tokensBefore, Number(m[1]));
    assert.equal(logged.tokensAfter, Number(m[2]));
    assert.equal(logged.summarizedMessages, Number(m[3]));
    assert.ok(Number(logged.summarizedTurns) > 0);
    // The request log line reports the compacted prompt.
    const done = lines.filter((l) => l.msg === 'request completed').at(-1)!;
    assert.equal(done.reqId, logged.reqId);
    assert.equal(done.promptTokens, Number(m[2]));
  }
  assert.equal(lines.filter((l) => l.msg === 'context compacted').length, cases.length);
  // A request under the threshold: no header.
  const small = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: wireBodies(1).openai });
  assert.equal(small.statusCode, 200);
  assert.equal(small.headers[COMPACTED_HEADER], undefined);
  // count_tokens counts the request as sent, never compacted: longer than the context is its 400, as before.
  const counted = await app.inject({ method: 'POST', url: '/v1/messages/count_tokens', payload: bodies.anthropic });
  assert.equal(counted.statusCode, 400);
  await app.close();
});

test('routes: without --auto-compact the same request is 400 context_length_exceeded, as before', async () => {
  const { app, engine } = compactingApp();
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: wireBodies(12).openai });
  assert.equal(res.statusCode, 400);
  assert.equal((res.json() as { error: { code: string } }).error.code, 'context_length_exceeded');
  assert.equal(res.headers[COMPACTED_HEADER], undefined);
  assert.equal(engine.jobs.length, 0);
  await app.close();
});
