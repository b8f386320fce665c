// fam3: Gemma-style <|tool_call>call:NAME{relaxed args}<tool_call|>.

import type { ParserCase } from './types.js';

const Q = '<|"|>';
const weather = `<|tool_call>call:get_weather{city:${Q}Paris${Q},days:3}<tool_call|>`;
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const fam3Cases: ParserCase[] = [
  { name: 'plain text', input: 'A <|b|> c <tool_call d', content: 'A <|b|> c <tool_call d', calls: [] },
  { name: 'one call', input: weather, content: '', calls: [WEATHER] },
  { name: 'text before and after', input: `Checking. ${weather} Done.`, content: 'Checking.  Done.', calls: [WEATHER] },
  { name: 'two calls', input: `${weather}<|tool_call>call:now{}<tool_call|>`, content: '', calls: [WEATHER, NOW] },
  {
    name: 'closing tag, braces and commas inside strings',
    input: `<|tool_call>call:write_file{path:${Q}a}.txt${Q},content:${Q}x <tool_call|> y, {z}: w${Q}}<tool_call|>`,
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'a}.txt', content: 'x <tool_call|> y, {z}: w' } }],
  },
  {
    name: 'nested objects, arrays, literals, numbers',
    input: `<|tool_call>call:search{query:${Q}q${Q},filters:{age:[1,-2.5,3e2],ok:true,none:null},tags:[${Q}a${Q},${Q}b${Q}],score:0.25}<tool_call|>`,
    content: '',
    calls: [
      { name: 'search', arguments: { query: 'q', filters: { age: [1, -2.5, 300], ok: true, none: null }, tags: ['a', 'b'], score: 0.25 } },
    ],
  },
  {
    name: 'JSON-style quoting is accepted',
    input: '<|tool_call>call:search{"query": "say \\"hi\\"", "limit": 5}<tool_call|>',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'say "hi"', limit: 5 } }],
  },
  { name: 'empty {} arguments', input: '<|tool_call>call:now{}<tool_call|>', content: '', calls: [NOW] },
  { name: 'missing closing tag at the end', input: 'ok <|tool_call>call:now{}', content: 'ok ', calls: [NOW] },
  { name: 'call: prefix missing', input: `<|tool_call>get_weather{city:${Q}Paris${Q},days:3}<tool_call|>`, content: '', calls: [WEATHER] },
  {
    name: 'bare word values are strings',
    input: '<|tool_call>call:get_weather{city:Paris,days:3}<tool_call|>',
    content: '',
    calls: [WEATHER],
  },
  { name: 'fenced', input: `\`\`\`\n${weather}\n\`\`\`\nok`, content: 'ok', calls: [WEATHER] },
  { name: 'empty body: text', input: '<|tool_call>{}<tool_call|>', content: '<|tool_call>{}<tool_call|>', calls: [] },
  {
    name: 'unclosed arguments at the end: text',
    input: `<|tool_call>call:get_weather{city:${Q}Par`,
    content: `<|tool_call>call:get_weather{city:${Q}Par`,
    calls: [],
  },
  {
    name: 'arguments that do not parse: text',
    input: '<|tool_call>call:now{:}<tool_call|>',
    content: '<|tool_call>call:now{:}<tool_call|>',
    calls: [],
  },
];
