// fam2: Mistral, `[TOOL_CALLS]` then a JSON array (pre-v11) or NAME[ARGS]{json} (v11+).

import type { ParserCase } from './types.js';

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const fam2Cases: ParserCase[] = [
  { name: 'plain text', input: 'Bonjour [tout] le monde.', content: 'Bonjour [tout] le monde.', calls: [] },
  {
    name: 'pre-v11 array, one call',
    input: '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'pre-v11 array, two calls with ids',
    input:
      '[TOOL_CALLS][{"name": "now", "arguments": {}, "id": "a1B2c3D4e"}, {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "z9Y8x7W6v"}]',
    content: '',
    calls: [NOW, WEATHER],
  },
  { name: 'v11 NAME[ARGS]{json}', input: '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}', content: '', calls: [WEATHER] },
  {
    name: 'v11 two calls, each with [TOOL_CALLS]',
    input: '[TOOL_CALLS]now[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}',
    content: '',
    calls: [NOW, WEATHER],
  },
  {
    name: 'v11 two calls back to back',
    input: '[TOOL_CALLS]get_weather{"city": "Paris", "days": 3}now{}',
    content: '',
    calls: [WEATHER, NOW],
  },
  {
    name: 'v13 [CALL_ID]',
    input: '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris", "days": 3}',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'text before and after',
    input: 'Let me see. [TOOL_CALLS]now[ARGS]{} Then I answer.',
    content: 'Let me see.  Then I answer.',
    calls: [NOW],
  },
  {
    name: 'brackets and the tag inside JSON strings',
    input: '[TOOL_CALLS]search[ARGS]{"query": "]} [TOOL_CALLS] [ARGS] {"}',
    content: '',
    calls: [{ name: 'search', arguments: { query: ']} [TOOL_CALLS] [ARGS] {' } }],
  },
  {
    name: 'json code fence around the call',
    input: 'Call:\n```json\n[TOOL_CALLS][{"name": "now", "arguments": {}}]\n```\nok',
    content: 'Call:\nok',
    calls: [NOW],
  },
  { name: 'a single object instead of an array', input: '[TOOL_CALLS]{"name": "now", "arguments": {}}', content: '', calls: [NOW] },
  { name: 'words after the tag: text', input: '[TOOL_CALLS] hello there', content: '[TOOL_CALLS] hello there', calls: [] },
  { name: 'empty array: text', input: '[TOOL_CALLS][]', content: '[TOOL_CALLS][]', calls: [] },
  { name: 'empty {} body: text', input: '[TOOL_CALLS]{}', content: '[TOOL_CALLS]{}', calls: [] },
  {
    name: 'tag lookalikes stay text',
    input: 'See [TOOL] and [TOOL_CALL] and [TOOL_CALLS',
    content: 'See [TOOL] and [TOOL_CALL] and [TOOL_CALLS',
    calls: [],
  },
  {
    name: 'cut off inside streamed arguments: closed',
    input: '[TOOL_CALLS]search[ARGS]{"query": "rain", "tags": ["a", "b',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'rain', tags: ['a', 'b'] } }],
  },
  {
    name: 'malformed arguments: closed at the last sound point, the rest is text',
    input: '[TOOL_CALLS]search[ARGS]{"query": "a", "limit": tru}',
    content: ', "limit": tru}',
    calls: [{ name: 'search', arguments: { query: 'a' } }],
  },
];
