// --ngram-speculative and --self-speculative end to end with the official `openai` client: greedy
// chat completions are the same with and without drafting — tool calls under a grammar (tool_choice required), stop strings,
// streaming — /metrics counts the drafts, and MODEL.toml's default_num_drafts applies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import { mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';
import { TINY_CHAT } from '../helpers/paths.js';
import type { DraftMode } from '../../src/engine/speculative/drafter.js';

let plain: TinyServer;
/** A server per drafter that runs on svc-tiny-chat (MTP needs weights it lacks: engine-mtp.test.ts). */
const drafting = new Map<DraftMode, TinyServer>();
before(async () => {
  plain = await startTinyServer({ disableThinking: true });
  for (const mode of ['ngram', 'self'] as const) {
    drafting.set(
      mode,
      await startTinyServer({ disableThinking: true }, {}, { speculative: { mode, numDrafts: 4, mtpQuantization: 'bf16', mtpVocab: 0 } }),
    );
  }
});
after(async () => {
  await plain.close();
  for (const server of drafting.values()) await server.close();
});

const WEATHER: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
};

type Body = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
const REQUESTS: [string, Body][] = [
  [
    'copy task',
    {
      model: 'm',
      messages: [
        { role: 'user', content: 'Repeat this sentence exactly: the quick brown fox jumps over the lazy dog near the river bank.' },
      ],
      max_tokens: 48,
      temperature: 0,
    },
  ],
  [
    'tool call under the grammar',
    {
      model: 'm',
      messages: [{ role: 'user', content: 'What is the weather in Paris and in Lyon and in Nice?' }],
      tools: [WEATHER],
      tool_choice: 'required',
      max_tokens: 96,
      temperature: 0,
    },
  ],
  [
    'a failed tool call retried (the arguments copied from the history)',
    {
      model: 'm',
      messages: [
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
        { role: 'user', content: 'It failed. Send it again.' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'send_email',
            description: 'Send an email.',
            parameters: {
              type: 'object',
              properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
              required: ['to'],
            },
          },
        },
      ],
      max_tokens: 96,
      temperature: 0,
    },
  ],
  [
    'stop strings',
    {
      model: 'm',
      messages: [{ role: 'user', content: 'Repeat this list: red, green, blue, red, green, blue, red, green, blue.' }],
      max_tokens: 48,
      temperature: 0,
      stop: ['blue, red'],
    },
  ],
];

for (const [name, body] of REQUESTS) {
  for (const mode of ['ngram', 'self'] as const)
    test(`greedy output with the ${mode} drafter equals plain decoding: ${name}`, async () => {
      const server = drafting.get(mode)!;
      const a = await plain.client.chat.completions.create(body);
      const b = await server.client.chat.completions.create(body);
      // Tool-call ids are random per response.
      const withoutIds = (m: OpenAI.Chat.Completions.ChatCompletionMessage) => ({
        ...m,
        tool_calls: m.tool_calls?.map((c) => ({ ...c, id: '' })),
      });
      assert.deepEqual(withoutIds(b.choices[0].message), withoutIds(a.choices[0].message));
      assert.equal(b.choices[0].finish_reason, a.choices[0].finish_reason);
      assert.deepEqual(b.usage, a.usage);
      // Streamed, the text and the tool calls put back together are the same too.
      const stream = await server.client.chat.completions.create({ ...body, stream: true });
      let text = '';
      let args = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) args += call.function?.arguments ?? '';
      }
      assert.equal(text, a.choices[0].message.content ?? '');
      assert.equal(args, (a.choices[0].message.tool_calls ?? []).map((c) => (c.type === 'function' ? c.function.arguments : '')).join(''));
    });
}

test('/metrics counts drafted and accepted tokens', async () => {
  const text = await (await fetch(`${drafting.get('ngram')!.base}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  assert.ok(value('svc_spec_draft_tokens_total') > 0, text);
  assert.ok(value('svc_spec_accepted_tokens_total') > 0);
  const ratio = value('svc_spec_acceptance_ratio');
  assert.ok(ratio > 0 && ratio <= 1, `${ratio}`);
});

test('svc serve: MODEL.toml default_num_drafts replaces --num-drafts while it is 1; an explicit value wins', async () => {
  // The checkpoint's files beside a MODEL.toml of its own (looked up beside the checkpoint first).
  const dir = mkdtempSync(join(tmpdir(), 'svc-spec-toml-'));
  try {
    for (const f of readdirSync(TINY_CHAT)) symlinkSync(join(TINY_CHAT, f), join(dir, f));
    writeFileSync(
      join(dir, 'MODEL.toml'),
      '[model]\nfamily = "qwen3"\ntool_call_parser = "hermes"\nreasoning = true\ndefault_num_drafts = 3\n',
    );
    const line = async (...flags: string[]) => {
      const port = await freePort();
      const svc = runSvc(['serve', '--model-from-path', dir, '--port', String(port), ...flags], /Listening on|Error|error/);
      await svc.ready;
      svc.child.kill('SIGTERM');
      await svc.exited;
      return /Speculative decoding: .*/.exec(svc.output().stderr)?.[0] ?? svc.output().stderr;
    };
    assert.match(await line('--ngram-speculative'), /ngram drafter, 3 draft tokens per verify step \(K = 4\)/);
    assert.match(await line('--ngram-speculative', '--num-drafts', '2'), /ngram drafter, 2 draft tokens per verify step/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
