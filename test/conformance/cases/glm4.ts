// glm4: <tool_call>NAME <arg_key>k</arg_key><arg_value>v</arg_value>… </tool_call>.

import type { ParserCase } from './types.js';

const weather =
  '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const glm4Cases: ParserCase[] = [
  { name: 'plain text', input: 'Hello <arg_key> and <tool_calls>.', content: 'Hello <arg_key> and <tool_calls>.', calls: [] },
  { name: 'one call, typed values', input: weather, content: '', calls: [WEATHER] },
  { name: 'two calls', input: `${weather}\n<tool_call>now\n</tool_call>`, content: '', calls: [WEATHER, NOW] },
  { name: 'text before and after', input: `Looking.\n${weather}\nDone`, content: 'Looking.\n\nDone', calls: [WEATHER] },
  {
    name: 'without a schema, JSON-looking values are JSON',
    input:
      '<tool_call>lookup\n<arg_key>n</arg_key>\n<arg_value>7</arg_value>\n<arg_key>flag</arg_key>\n<arg_value>true</arg_value>\n<arg_key>obj</arg_key>\n<arg_value>{"a": [1]}</arg_value>\n<arg_key>s</arg_key>\n<arg_value>hello world</arg_value>\n</tool_call>',
    content: '',
    calls: [{ name: 'lookup', arguments: { n: 7, flag: true, obj: { a: [1] }, s: 'hello world' } }],
  },
  {
    name: 'string-typed values stay strings',
    input: '<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>123</arg_value>\n</tool_call>',
    content: '',
    calls: [{ name: 'search', arguments: { query: '123' } }],
  },
  {
    name: 'no newline after the name',
    input:
      '<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'missing </arg_value> tags',
    input: '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n<arg_key>days</arg_key>\n<arg_value>3\n</tool_call>',
    content: '',
    calls: [WEATHER],
  },
  { name: 'no arguments', input: '<tool_call>now\n</tool_call>', content: '', calls: [NOW] },
  { name: 'fenced', input: `\`\`\`xml\n${weather}\n\`\`\``, content: '', calls: [WEATHER] },
  { name: 'missing </tool_call> at the end', input: '<tool_call>now\n', content: '', calls: [NOW] },
  {
    name: 'JSON body is not this format: text',
    input: '<tool_call>{"name": "now"}</tool_call>',
    content: '<tool_call>{"name": "now"}</tool_call>',
    calls: [],
  },
  { name: 'empty {} body: text', input: '<tool_call>{}</tool_call>', content: '<tool_call>{}</tool_call>', calls: [] },
];
