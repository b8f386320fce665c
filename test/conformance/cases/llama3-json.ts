// llama3_json: {"name", "parameters"} objects, optionally after <|python_tag|>, `;`-separated.

import type { ParserCase } from './types.js';

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };
const weather = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}';

export const llama3JsonCases: ParserCase[] = [
  { name: 'plain text', input: 'Use a <|tag|> or {x}; fine.', content: 'Use a <|tag|> or {x}; fine.', calls: [] },
  { name: 'after <|python_tag|>', input: `<|python_tag|>${weather}`, content: '', calls: [WEATHER] },
  { name: 'bare object', input: weather, content: '', calls: [WEATHER] },
  {
    name: 'two calls separated by ;',
    input: `<|python_tag|>${weather}; {"name": "now", "parameters": {}}`,
    content: '',
    calls: [WEATHER, NOW],
  },
  {
    name: 'semicolons and braces inside strings',
    input: '{"name": "search", "parameters": {"query": "a; {b}; c"}}',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'a; {b}; c' } }],
  },
  { name: 'text before and after', input: `Sure. ${weather}; thanks`, content: 'Sure. ; thanks', calls: [WEATHER] },
  { name: 'fenced', input: `\`\`\`json\n${weather}\n\`\`\``, content: '', calls: [WEATHER] },
  {
    name: 'built-in tool syntax after the tag: text',
    input: '<|python_tag|>brave_search.call(query="x")',
    content: '<|python_tag|>brave_search.call(query="x")',
    calls: [],
  },
  { name: 'non-call JSON stays text', input: '{"answer": 42}', content: '{"answer": 42}', calls: [] },
  { name: 'empty {} body: text', input: '<|python_tag|>{}', content: '<|python_tag|>{}', calls: [] },
  {
    name: 'cut off inside streamed arguments: closed',
    input: '<|python_tag|>{"name": "search", "parameters": {"query": "ab\\',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'ab' } }],
  },
];
