// End to end: the sampling controls (logit_bias, presence / frequency / repetition penalties,
// min_tokens, bad_words) and logprob bytes, through the official `openai` client against the real
// engine running svc-tiny-chat. Greedy (temperature 0) throughout, so each effect is a fact about
// the output, not a statistic. The tiny model's untrained tokens have logit exactly 0, so a bias
// of +100 on one of them dominates every step.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
/** The vLLM fields the openai client's types do not know. */
type Extra = { repetition_penalty?: number; min_tokens?: number; bad_words?: string[]; chat_template_kwargs?: object };

const tokenizer = loadTokenizer(TINY_CHAT);
const QUESTION = [{ role: 'user' as const, content: 'What is the capital of France?' }];
const COUNT = [{ role: 'user' as const, content: 'Count from 1 to 10.' }];
const HI = [{ role: 'user' as const, content: 'Hi' }];
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };

let server: TinyServer;
let client: OpenAI;

before(async () => {
  server = await startTinyServer();
  client = server.client;
});

after(async () => {
  await server?.close();
});

function chat(params: Omit<ChatParams, 'model'> & Extra): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  return client.chat.completions.create({ model: 'm', temperature: 0, ...params } as ChatParams);
}

/** The generated tokens, as the logprob records write them. */
function recordTokens(res: OpenAI.Chat.Completions.ChatCompletion): string[] {
  return res.choices[0]!.logprobs!.content!.map((r) => r.token);
}

const greedyQuestion = () => chat({ messages: QUESTION, logprobs: true, max_tokens: 40, ...NO_THINKING });

test('logit_bias +100 on a token: at temperature 0 it is every token; -100 on the greedy first token changes it', async () => {
  const banana = tokenizer.encode(' banana');
  assert.equal(banana.length, 1);
  const forced = await chat({ messages: QUESTION, max_tokens: 4, logit_bias: { [banana[0]!]: 100 }, ...NO_THINKING });
  assert.equal(forced.choices[0]!.message.content, ' banana'.repeat(4));

  const greedy = await greedyQuestion();
  const first = tokenizer.encode(greedy.choices[0]!.logprobs!.content![0]!.token);
  assert.equal(first.length, 1);
  const banned = await chat({
    messages: QUESTION,
    logprobs: true,
    top_logprobs: 1,
    max_tokens: 3,
    logit_bias: { [first[0]!]: -100 },
    ...NO_THINKING,
  });
  assert.notEqual(recordTokens(banned)[0], recordTokens(greedy)[0]);
  // Log-probabilities are of the model's own distribution (before the bias): the banned token is still the top one.
  assert.equal(banned.choices[0]!.logprobs!.content![0]!.top_logprobs[0]!.token, recordTokens(greedy)[0]);
});

test('min_tokens: a prompt that stops early runs to at least min_tokens tokens; without it, it stops sooner', async () => {
  const plain = await chat({ messages: HI, max_tokens: 48, ...NO_THINKING });
  assert.equal(plain.choices[0]!.finish_reason, 'stop');
  assert.ok(plain.usage!.completion_tokens < 40, `the plain answer is short (${plain.usage!.completion_tokens} tokens)`);
  const held = await chat({ messages: HI, max_tokens: 48, min_tokens: 40, ...NO_THINKING });
  assert.ok(held.usage!.completion_tokens >= 40, `${held.usage!.completion_tokens} completion tokens`);
  assert.ok(held.choices[0]!.message.content!.startsWith(plain.choices[0]!.message.content!.trimEnd().slice(0, 5)));
});

test('repetition_penalty 5 changes the greedy output; 1 is off', async () => {
  const params = { messages: COUNT, max_tokens: 24, ...NO_THINKING };
  const base = await chat(params);
  const one = await chat({ ...params, repetition_penalty: 1 });
  const five = await chat({ ...params, repetition_penalty: 5 });
  assert.equal(one.choices[0]!.message.content, base.choices[0]!.message.content);
  assert.notEqual(five.choices[0]!.message.content, base.choices[0]!.message.content);
});

test('presence and frequency penalties are accepted and change a greedy output that repeats itself', async () => {
  // With thinking on, the answer repeats words of the reasoning ("The capital of …"): those are penalized.
  const params = { messages: QUESTION, max_tokens: 40 };
  const output = (res: OpenAI.Chat.Completions.ChatCompletion) => {
    const m = res.choices[0]!.message as { content: string | null; reasoning?: string };
    return `${m.reasoning ?? ''}|${m.content ?? ''}`;
  };
  const base = output(await chat(params));
  assert.equal(output(await chat({ ...params, presence_penalty: 0, frequency_penalty: 0 })), base);
  assert.notEqual(output(await chat({ ...params, presence_penalty: 2 })), base);
  assert.notEqual(output(await chat({ ...params, frequency_penalty: 2 })), base);
  // Negative values (encouraging repeats) are accepted too.
  assert.equal((await chat({ ...params, max_tokens: 4, presence_penalty: -2, frequency_penalty: -2 })).choices.length, 1);
});

test('logprob bytes: a character split over two tokens; the records’ bytes concatenate to the UTF-8 text (n = 2, batched)', async () => {
  // 龘 is two tokens: "\xe9\xbe" and "\x98". Biased +100 and +99, with frequency_penalty 2 the
  // sequence alternates between them (100 > 99, then 98 < 99, 98 > 97, …): whole characters, each
  // split across two tokens. Both sequences of n = 2 do it alike: their counts are their own.
  const [a, b] = tokenizer.encode('龘');
  assert.ok(a !== undefined && b !== undefined && tokenizer.encode('龘').length === 2);
  const res = await chat({
    messages: QUESTION,
    n: 2,
    max_tokens: 6,
    logprobs: true,
    top_logprobs: 2,
    logit_bias: { [a]: 100, [b]: 99 },
    frequency_penalty: 2,
    ...NO_THINKING,
  });
  for (const choice of res.choices) {
    assert.equal(choice.message.content, '龘龘龘');
    const records = choice.logprobs!.content!;
    assert.deepEqual(
      records.map((r) => r.token),
      ['\\xe9\\xbe', '\\x98', '\\xe9\\xbe', '\\x98', '\\xe9\\xbe', '\\x98'],
    );
    assert.deepEqual(Buffer.from(records.flatMap((r) => r.bytes!)), Buffer.from('龘龘龘', 'utf8'));
  }
  // The same over a natural answer: its records' bytes are its text (the closing end-of-turn token aside).
  const greedy = await greedyQuestion();
  const records = greedy.choices[0]!.logprobs!.content!;
  const text = records.filter((r) => r.token !== '<|im_end|>').flatMap((r) => r.bytes!);
  assert.equal(Buffer.from(text).toString('utf8'), greedy.choices[0]!.message.content);
});

test('legacy completions: logit_bias and min_tokens apply; split tokens are written bytes:\\xNN', async () => {
  const [a, b] = tokenizer.encode('龘');
  const res = await client.completions.create({
    model: 'm',
    prompt: 'The capital of France is',
    temperature: 0,
    max_tokens: 4,
    logprobs: 0,
    logit_bias: { [a!]: 100, [b!]: 99 },
    frequency_penalty: 2,
  });
  assert.equal(res.choices[0]!.text, '龘龘');
  assert.deepEqual(res.choices[0]!.logprobs!.tokens, ['bytes:\\xe9\\xbe', 'bytes:\\x98', 'bytes:\\xe9\\xbe', 'bytes:\\x98']);
  assert.deepEqual(res.choices[0]!.logprobs!.text_offset, [0, 0, 1, 1]);
});

test('bad_words: a word of the greedy answer no longer appears', async () => {
  const greedy = (await greedyQuestion()).choices[0]!.message.content!;
  assert.match(greedy, /Paris/);
  const res = await chat({ messages: QUESTION, max_tokens: 40, bad_words: ['Paris'], logprobs: true, ...NO_THINKING });
  assert.ok(!recordTokens(res).some((t) => t.trim() === 'Paris'), recordTokens(res).join('|'));
  assert.notEqual(res.choices[0]!.message.content, greedy);
});

test('400s from the real server: logit_bias out of the vocabulary, min_tokens over max_tokens', async () => {
  await assert.rejects(chat({ messages: QUESTION, logit_bias: { '999999': 1 } }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal((err.error as { param?: string }).param, 'logit_bias');
    return true;
  });
  await assert.rejects(chat({ messages: QUESTION, max_tokens: 5, min_tokens: 6 }), OpenAI.BadRequestError);
});
