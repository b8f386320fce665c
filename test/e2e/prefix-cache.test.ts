// --enable-prefix-caching end to end: a conversation resent with one more turn reports its cached
// prompt tokens in every protocol's usage (OpenAI chat / completions, streamed too; Responses;
// Anthropic's cache_read_input_tokens) and in /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

let server: TinyServer;
let anthropic: Anthropic;
before(async () => {
  server = await startTinyServer({ disableThinking: true }, {}, { enablePrefixCaching: true });
  anthropic = new Anthropic({ baseURL: server.base, apiKey: 'x', maxRetries: 0 });
});
after(() => server.close());

const SYSTEM =
  'You are a terse assistant for a hardware shop. Prices are in euros. Opening hours are nine to five, ' +
  'Monday to Saturday. Never recommend a competitor, never discuss politics, and answer in one short sentence. ' +
  'If you do not know something, say so plainly and offer to ask a colleague.';

/** What a prompt of `n` tokens finds cached when it was sent before (16-token blocks). */
const reusable = (n: number) => Math.min(Math.floor(n / 16) * 16, n - 1);

test('chat completions: the second turn reports the first turn’s prompt as cached, streamed and not', async () => {
  const first = [
    { role: 'system' as const, content: SYSTEM },
    { role: 'user' as const, content: 'Do you sell hammers?' },
  ];
  const r1 = await server.client.chat.completions.create({ model: 'm', messages: first, max_tokens: 6, temperature: 0 });
  assert.equal(r1.usage?.prompt_tokens_details?.cached_tokens, 0);
  const second = [
    ...first,
    { role: 'assistant' as const, content: r1.choices[0].message.content ?? '' },
    { role: 'user' as const, content: 'How much is the cheapest one?' },
  ];
  const r2 = await server.client.chat.completions.create({ model: 'm', messages: second, max_tokens: 6, temperature: 0 });
  const cached = r2.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  assert.ok(cached >= 48 && cached % 16 === 0 && cached < r2.usage!.prompt_tokens, `${cached} of ${r2.usage!.prompt_tokens}`);

  const stream = await server.client.chat.completions.create({
    model: 'm',
    messages: second,
    max_tokens: 4,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.ok(usage);
  // The same prompt again: its whole blocks (a partial last block is not cached; a prompt of whole
  // blocks runs its last token anyway, for its logits).
  assert.equal(usage.prompt_tokens_details?.cached_tokens, reusable(usage.prompt_tokens));
});

test('completions: a longer prompt with the same beginning reuses its blocks', async () => {
  const base = `${SYSTEM}\n\nCustomer: Do you open on Sundays?\nClerk:`;
  const r1 = await server.client.completions.create({ model: 'm', prompt: base, max_tokens: 3, temperature: 0 });
  const r2 = await server.client.completions.create({
    model: 'm',
    prompt: `${base} No.\nCustomer: Why not?\nClerk:`,
    max_tokens: 3,
    temperature: 0,
  });
  const details = (r2.usage as unknown as { prompt_tokens_details: { cached_tokens: number } }).prompt_tokens_details;
  assert.ok(details.cached_tokens >= Math.floor((r1.usage!.prompt_tokens - 1) / 16) * 16 - 16, JSON.stringify(r2.usage));
});

test('responses: input_tokens_details.cached_tokens on a resent conversation', async () => {
  const input = [
    { role: 'system' as const, content: SYSTEM },
    { role: 'user' as const, content: 'Do you sell nails by the kilo?' },
  ];
  await server.client.responses.create({ model: 'm', input, max_output_tokens: 4, temperature: 0, store: false });
  const r = await server.client.responses.create({
    model: 'm',
    input: [...input, { role: 'user' as const, content: 'And screws?' }],
    max_output_tokens: 4,
    temperature: 0,
    store: false,
  });
  assert.ok(r.usage!.input_tokens_details.cached_tokens >= 48, JSON.stringify(r.usage));
});

test('anthropic messages: cache_read_input_tokens, and input_tokens without them', async () => {
  const messages = [{ role: 'user' as const, content: 'Can I return a drill after a month?' }];
  const m1 = await anthropic.messages.create({ model: 'm', system: SYSTEM, messages, max_tokens: 4 });
  const total = m1.usage.input_tokens + (m1.usage.cache_read_input_tokens ?? 0);
  const m2 = await anthropic.messages.create({ model: 'm', system: SYSTEM, messages, max_tokens: 4 });
  assert.equal(m2.usage.cache_read_input_tokens, reusable(total));
  assert.equal(m2.usage.input_tokens, total - reusable(total));
  // Streamed: the final usage (message_delta) carries the cache read.
  const stream = anthropic.messages.stream({ model: 'm', system: SYSTEM, messages, max_tokens: 4 });
  const final = await stream.finalMessage();
  assert.equal(final.usage.cache_read_input_tokens, reusable(total));
});

test('/metrics: cached prompt tokens and the hit ratio', async () => {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
  assert.ok(value('svc_prompt_tokens_cached_total') > 0);
  const ratio = value('svc_prefix_cache_hit_ratio');
  assert.ok(ratio > 0 && ratio < 1, `${ratio}`);
  assert.ok(value('svc_prefix_cache_blocks') > 0);
});
