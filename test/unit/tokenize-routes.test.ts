// POST /tokenize and POST /detokenize over the real app (scripted engine, svc-tiny-chat's real
// tokenizer and chat template), on the calling thread and through the prompt workers: the prompt
// and messages forms, add_special_tokens both ways (on a BOS tokenizer too), count and
// max_model_len, the round trip, the 400s in the OpenAI shape, 401 without the key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { InjectOptions } from 'fastify';
import { PromptWorkers } from '../../src/chat/prompt-workers.js';
import { renderChatText } from '../../src/chat/prompt.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { ApiKeys } from '../../src/ops/auth.js';
import { MODELS } from '../helpers/paths.js';
import { SCRIPTED_MAX_SEQ_LEN, scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';

type Setup = ReturnType<typeof scriptedApp>;

async function post(app: Setup['app'], url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST' as InjectOptions['method'],
    url,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.statusCode, body: res.body, json: () => JSON.parse(res.body) };
}

const TEXTS = [
  'Hello, world!',
  'The capital of France is Paris.\n\nIndented:\n\tfoo  bar',
  'Ünïcödé: naïve café, Ελληνικά, 日本語のテキスト, العربية',
  'Emoji: 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷',
  '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello',
  ' leading and trailing spaces ',
  '',
];

const USER = [{ role: 'user', content: 'What is the capital of France?' }];

/** The same checks with prompts built on the calling thread and in the prompt workers. */
for (const mode of ['calling thread', 'prompt workers'] as const) {
  async function withApp(fn: (s: Setup) => Promise<void>): Promise<void> {
    const setup = scriptedApp();
    const workers =
      mode === 'prompt workers' ? new PromptWorkers(tinyTokenizer.packed, setup.runtime.chatTemplate, SCRIPTED_MAX_SEQ_LEN) : null;
    if (workers) setup.runtime.prompts = workers;
    try {
      await fn(setup);
    } finally {
      await setup.app.close();
      await workers?.close();
    }
  }

  test(`tokenize (${mode}): a prompt → count, max_model_len, the tokenizer's ids; detokenize round-trips`, () =>
    withApp(async ({ app }) => {
      for (const text of TEXTS) {
        for (const add of [undefined, true, false]) {
          const res = await post(app, '/tokenize', { model: 'svc-tiny-chat', prompt: text, add_special_tokens: add });
          assert.equal(res.status, 200, res.body);
          const body = res.json();
          assert.deepEqual(Object.keys(body), ['count', 'max_model_len', 'tokens']);
          const expected = tinyTokenizer.encode(text, { addSpecialTokens: add ?? true });
          assert.deepEqual(body, { count: expected.length, max_model_len: SCRIPTED_MAX_SEQ_LEN, tokens: expected });
          const back = await post(app, '/detokenize', { tokens: body.tokens });
          assert.equal(back.status, 200, back.body);
          if (add === false) assert.deepEqual(back.json(), { prompt: text }, JSON.stringify(text));
        }
      }
      // Special tokens written in the text are their single ids.
      const special = (await post(app, '/tokenize', { prompt: '<|im_start|><|im_end|>' })).json();
      assert.deepEqual(special.tokens, [tinyTokenizer.tokenToId('<|im_start|>'), tinyTokenizer.tokenToId('<|im_end|>')]);
      // return_token_strs: each id's token.
      const strs = (await post(app, '/tokenize', { prompt: 'Hi there', return_token_strs: true })).json();
      assert.deepEqual(
        strs.token_strs,
        strs.tokens.map((id: number) => tinyTokenizer.idToToken(id)),
      );
      // Any ids detokenize, special tokens kept.
      const ids = [tinyTokenizer.tokenToId('<|im_end|>')!, ...tinyTokenizer.encode(' ok')];
      assert.deepEqual((await post(app, '/detokenize', { tokens: ids })).json(), { prompt: '<|im_end|> ok' });
      assert.deepEqual((await post(app, '/detokenize', { tokens: [] })).json(), { prompt: '' });
    }));

  test(`tokenize (${mode}): messages go through the chat template, with or without the generation prompt`, () =>
    withApp(async ({ app, runtime }) => {
      const messages = [{ role: 'system', content: 'Be brief.' }, ...USER];
      const res = await post(app, '/tokenize', { messages });
      assert.equal(res.status, 200, res.body);
      const rendered = renderChatText(runtime, { messages, tools: [] });
      assert.ok(rendered.endsWith('<|im_start|>assistant\n'), rendered);
      const expected = tinyTokenizer.encode(rendered);
      assert.deepEqual(res.json(), { count: expected.length, max_model_len: SCRIPTED_MAX_SEQ_LEN, tokens: expected });
      // Same count as the chat route's prompt (count_tokens renders the same way).
      const text = (await post(app, '/detokenize', { tokens: expected })).json().prompt;
      assert.equal(text, rendered);

      const noGen = (await post(app, '/tokenize', { messages, add_generation_prompt: false })).json();
      const noGenText = (await post(app, '/detokenize', { tokens: noGen.tokens })).json().prompt;
      assert.equal(noGenText, renderChatText(runtime, { messages, tools: [], addGenerationPrompt: false }));
      assert.ok(!noGenText.endsWith('<|im_start|>assistant\n'), noGenText);
      assert.ok(noGen.count < expected.length);

      // Tools are rendered into the prompt; chat_template_kwargs reach the template.
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
      const withTools = (await post(app, '/tokenize', { messages: USER, tools })).json();
      const withToolsText = (await post(app, '/detokenize', { tokens: withTools.tokens })).json().prompt;
      assert.ok(withToolsText.includes('get_weather'), withToolsText);
      const kwargs = { enable_thinking: false };
      const noThink = (await post(app, '/tokenize', { messages: USER, chat_template_kwargs: kwargs })).json();
      const noThinkText = renderChatText(runtime, { messages: USER, tools: [], chatTemplateKwargs: kwargs });
      assert.deepEqual(noThink.tokens, tinyTokenizer.encode(noThinkText));

      // Content parts and assistant tool calls decode as for /v1/chat/completions.
      const parts = await post(app, '/tokenize', {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: { name: 'get_weather', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        tools,
      });
      assert.equal(parts.status, 200, parts.body);
    }));

  test(`tokenize (${mode}): 400s name the field, in the OpenAI shape`, () =>
    withApp(async ({ app, engine }) => {
      const cases: [string, unknown, string, RegExp][] = [
        ['/tokenize', {}, 'prompt', /Missing required parameter: 'prompt' \(or 'messages'\)/],
        ['/tokenize', { model: 'm' }, 'prompt', /prompt/],
        ['/tokenize', { prompt: 'a', messages: USER }, 'messages', /either 'prompt' or 'messages'/],
        ['/tokenize', { prompt: 5 }, 'prompt', /Invalid type for 'prompt'/],
        ['/tokenize', { prompt: ['a'] }, 'prompt', /Invalid type for 'prompt'/],
        ['/tokenize', { messages: 'hi' }, 'messages', /Invalid type for 'messages'/],
        ['/tokenize', { messages: [] }, 'messages', /messages/],
        ['/tokenize', { messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role', /role/],
        ['/tokenize', { messages: [{ role: 'user' }] }, 'messages[0].content', /messages\[0\]\.content/],
        ['/tokenize', { prompt: 'a', add_special_tokens: 'yes' }, 'add_special_tokens', /Invalid type/],
        ['/tokenize', { messages: USER, add_generation_prompt: 1 }, 'add_generation_prompt', /Invalid type/],
        ['/detokenize', {}, 'tokens', /Missing required parameter: 'tokens'/],
        ['/detokenize', { tokens: 'abc' }, 'tokens', /Invalid type for 'tokens'/],
        ['/detokenize', { tokens: [1, 'a'] }, 'tokens[1]', /Invalid type for 'tokens\[1\]'/],
        ['/detokenize', { tokens: [1, 2.5] }, 'tokens[1]', /tokens\[1\]/],
        ['/detokenize', { tokens: [1, -1] }, 'tokens[1]', /tokens\[1\]/],
        ['/detokenize', { tokens: [1, tinyTokenizer.vocabSize] }, 'tokens[1]', /out of range/],
        ['/detokenize', { tokens: [10 ** 12] }, 'tokens[0]', /out of range/],
      ];
      for (const [url, body, param, message] of cases) {
        const res = await post(app, url, body);
        assert.equal(res.status, 400, `${url} ${JSON.stringify(body)}: ${res.body}`);
        const { error } = res.json();
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.param, param, `${url} ${JSON.stringify(body)}: ${res.body}`);
        assert.match(error.message, message);
      }
      const notJson = await post(app, '/tokenize', '{"prompt": ');
      assert.equal(notJson.status, 400);
      assert.equal(notJson.json().error.code, 'invalid_json');
      // Past the context length: 400 context_length_exceeded (tokenization stops early).
      const long = await post(app, '/tokenize', { prompt: 'word '.repeat(SCRIPTED_MAX_SEQ_LEN + 10) });
      assert.equal(long.status, 400, long.body);
      assert.equal(long.json().error.code, 'context_length_exceeded');
      assert.equal(long.json().error.param, 'prompt');
      const longChat = await post(app, '/tokenize', { messages: [{ role: 'user', content: 'word '.repeat(SCRIPTED_MAX_SEQ_LEN) }] });
      assert.equal(longChat.json().error.code, 'context_length_exceeded');
      assert.equal(longChat.json().error.param, 'messages');
      // Exactly the context length is fine (count may equal max_model_len).
      const full = await post(app, '/tokenize', { prompt: ' word'.repeat(SCRIPTED_MAX_SEQ_LEN), add_special_tokens: false });
      assert.equal(full.status, 200, full.body);
      assert.equal(full.json().count, SCRIPTED_MAX_SEQ_LEN);
      // GET is a 405; the engine never ran.
      const get = await app.inject({ method: 'GET', url: '/tokenize' });
      assert.equal(get.statusCode, 405);
      assert.equal(engine.jobs.length, 0);
    }));
}

test('tokenize: add_special_tokens on a tokenizer that adds BOS (default on for prompt, off for messages)', async () => {
  const setup = scriptedApp();
  const bosTok = loadTokenizer(join(MODELS, 'tinystories-656k'));
  setup.runtime.tokenizer = bosTok;
  const bos = bosTok.tokenToId(bosTok.bosToken!)!;
  try {
    const plain = bosTok.encode('Once upon a time');
    const dflt = (await post(setup.app, '/tokenize', { prompt: 'Once upon a time' })).json();
    assert.deepEqual(dflt.tokens, [bos, ...plain]);
    const on = (await post(setup.app, '/tokenize', { prompt: 'Once upon a time', add_special_tokens: true })).json();
    assert.deepEqual(on.tokens, [bos, ...plain]);
    const off = (await post(setup.app, '/tokenize', { prompt: 'Once upon a time', add_special_tokens: false })).json();
    assert.deepEqual(off.tokens, plain);
    assert.equal(off.count, dflt.count - 1);
    const msgs = [{ role: 'user', content: 'Once upon a time' }];
    const chatDefault = (await post(setup.app, '/tokenize', { messages: msgs })).json();
    assert.notEqual(chatDefault.tokens[0], bos);
    const chatOn = (await post(setup.app, '/tokenize', { messages: msgs, add_special_tokens: true })).json();
    assert.deepEqual(chatOn.tokens, [bos, ...chatDefault.tokens]);
  } finally {
    await setup.app.close();
  }
});

test('tokenize: 503 model_not_loaded before a model is loaded; 401 without the key when auth is on', async () => {
  const idle = scriptedApp({ ready: false });
  try {
    for (const [url, body] of [
      ['/tokenize', { prompt: 'hi' }],
      ['/detokenize', { tokens: [1] }],
    ] as const) {
      const res = await post(idle.app, url, body);
      assert.equal(res.status, 503, res.body);
      assert.equal(res.json().error.code, 'model_not_loaded');
    }
  } finally {
    await idle.app.close();
  }

  const KEY = 'sk-svc-tokenize-test';
  const authed = scriptedApp({ apiKeys: new ApiKeys([KEY]) });
  try {
    for (const [url, body] of [
      ['/tokenize', { prompt: 'hi' }],
      ['/detokenize', { tokens: [1] }],
    ] as const) {
      const denied = await post(authed.app, url, body);
      assert.equal(denied.status, 401, denied.body);
      assert.equal(denied.json().error.code, 'invalid_api_key');
      assert.equal((await post(authed.app, url, body, { authorization: 'Bearer wrong' })).status, 401);
      assert.equal((await post(authed.app, url, body, { authorization: `Bearer ${KEY}` })).status, 200);
      assert.equal((await post(authed.app, url, body, { 'x-api-key': KEY })).status, 200);
    }
  } finally {
    await authed.app.close();
  }
});
