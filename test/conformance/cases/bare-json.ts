// bare_json: untagged JSON call objects (or arrays of them) anywhere in the output.

import type { ParserCase } from './types.js';

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };
const weather = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}';

export const bareJsonCases: ParserCase[] = [
  { name: 'plain text', input: 'Sets use {braces} and lists [1, 2].', content: 'Sets use {braces} and lists [1, 2].', calls: [] },
  { name: 'the whole output is a call', input: weather, content: '', calls: [WEATHER] },
  {
    name: '"parameters" instead of "arguments"',
    input: '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}',
    content: '',
    calls: [WEATHER],
  },
  { name: 'text before and after', input: `Calling now: ${weather} - done`, content: 'Calling now:  - done', calls: [WEATHER] },
  { name: 'an array of calls', input: `[${weather}, {"name": "now", "arguments": {}}]`, content: '', calls: [WEATHER, NOW] },
  { name: 'json code fence', input: `Here:\n\`\`\`json\n${weather}\n\`\`\`\n`, content: 'Here:\n', calls: [WEATHER] },
  {
    name: 'a fenced JSON that is not a call stays, fence and all',
    input: 'Config:\n```json\n{"debug": true}\n```\n',
    content: 'Config:\n```json\n{"debug": true}\n```\n',
    calls: [],
  },
  {
    name: 'other JSON objects stay text',
    input: 'Result: {"a": 1, "b": [2, {"c": null}]} ok',
    content: 'Result: {"a": 1, "b": [2, {"c": null}]} ok',
    calls: [],
  },
  {
    name: 'a call-shaped object nested in other JSON stays text',
    input: '{"result": {"name": "now", "arguments": {}}}',
    content: '{"result": {"name": "now", "arguments": {}}}',
    calls: [],
  },
  {
    name: 'arguments that are not an object: text',
    input: '{"name": "now", "arguments": 5}',
    content: '{"name": "now", "arguments": 5}',
    calls: [],
  },
  { name: 'no name: text', input: '{"arguments": {}}', content: '{"arguments": {}}', calls: [] },
  { name: 'empty object: text', input: 'x {} y []', content: 'x {} y []', calls: [] },
  {
    name: 'braces, brackets and fences inside strings',
    input: '{"name": "write_file", "arguments": {"path": "a", "content": "} ] ```json\\n{"}}',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'a', content: '} ] ```json\n{' } }],
  },
  {
    name: 'two calls with text between',
    input: `${weather}\nand also\n{"name": "now", "arguments": {}}`,
    content: '\nand also\n',
    calls: [WEATHER, NOW],
  },
  { name: 'cut off before committing: text', input: 'Try {"name": "now", "argu', content: 'Try {"name": "now", "argu', calls: [] },
];
