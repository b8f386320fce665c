// harmony (GPT-OSS): calls are messages to functions.NAME. The tool-call parser alone (no reasoning
// stage in front of it): every other message's body is text, the framing is dropped. What the model
// writes after the generation prompt's `<|start|>assistant`; `<|call|>` and `<|return|>` are EOS
// tokens, usually hidden by the pipeline, so most cases end without them.

import type { ParserCase } from './types.js';

const A = '<|start|>assistant';
const weatherCall = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3}';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const harmonyCases: ParserCase[] = [
  { name: 'plain text', input: 'A <|b|> c to= d', content: 'A <|b|> c to= d', calls: [] },
  { name: 'a final answer', input: '<|channel|>final<|message|>Paris.<|return|>', content: 'Paris.', calls: [] },
  { name: 'one call (EOS hid <|call|>)', input: weatherCall, content: '', calls: [WEATHER] },
  {
    name: 'one call ending in <|call|>, junk after it dropped',
    input: `${weatherCall}<|call|>${A}<|channel|>final`,
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'recipient before the channel, at the start of the output',
    input: ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "days": 3}<|call|>',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'recipient before the channel, after <|start|>',
    input: `<|channel|>analysis<|message|>x<|end|>${A} to=functions.now<|channel|>commentary json<|message|>{}`,
    content: 'x',
    calls: [NOW],
  },
  {
    name: 'analysis then a call (no reasoning stage: analysis is text)',
    input: `<|channel|>analysis<|message|>Need weather.<|end|>${A}${weatherCall}`,
    content: 'Need weather.',
    calls: [WEATHER],
  },
  {
    name: 'a preamble then a call',
    input: `<|channel|>commentary<|message|>Checking the weather.<|end|>${A}${weatherCall}<|call|>`,
    content: 'Checking the weather.',
    calls: [WEATHER],
  },
  {
    name: 'two calls in one output',
    input: `${weatherCall}<|end|>${A}<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}`,
    content: '',
    calls: [WEATHER, NOW],
  },
  {
    name: 'special tokens inside argument strings are string content',
    input: '<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>{"path": "a.txt", "content": "x <|end"}',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'x <|end' } }],
  },
  {
    name: 'arguments cut off (max_tokens) are closed',
    input: '<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query": "long que',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'long que' } }],
  },
  {
    name: 'cut off right after the header: empty arguments',
    input: '<|channel|>commentary to=functions.now <|constrain|>json<|message|>',
    content: '',
    calls: [NOW],
  },
  {
    name: 'malformed arguments close at their last safe point',
    input: '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris" oops}<|call|>',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
  },
  {
    name: 'a body that is no JSON object gives {}',
    input: '<|channel|>commentary to=functions.now<|message|>now please<|call|>',
    content: '',
    calls: [NOW],
  },
  { name: 'a header cut off is dropped', input: 'Hi.<|start|>assistant<|channel|>comment', content: 'Hi.', calls: [] },
  { name: 'text starting with to= stays text', input: 'to=do: buy milk', content: 'to=do: buy milk', calls: [] },
  {
    name: 'a message to a built-in tool is no function call',
    input: '<|channel|>analysis to=python code<|message|>print(1)<|call|>',
    content: 'print(1)',
    calls: [],
  },
];
