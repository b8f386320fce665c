// pythonic: [f(a=1), g(b="x")] with Python literal arguments.

import type { ParserCase } from './types.js';

const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const pythonicCases: ParserCase[] = [
  { name: 'plain text', input: 'See [the docs](http://x.y) and [1, 2].', content: 'See [the docs](http://x.y) and [1, 2].', calls: [] },
  { name: 'one call', input: '[get_weather(city="Paris", days=3)]', content: '', calls: [WEATHER] },
  { name: 'two calls', input: "[get_weather(city='Paris', days=3), now()]", content: '', calls: [WEATHER, NOW] },
  {
    name: 'Python literals',
    input: "[search(query='it\\'s \"q\"\\n', limit=None, score=-1.5e2, filters={'a': (1, 2), 3: [True, False]}, tags=['x',],)]",
    content: '',
    calls: [
      {
        name: 'search',
        arguments: { query: 'it\'s "q"\n', limit: null, score: -150, filters: { a: [1, 2], '3': [true, false] }, tags: ['x'] },
      },
    ],
  },
  {
    name: 'brackets and parentheses inside strings',
    input: '[search(query="f(x)] [y)")]',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'f(x)] [y)' } }],
  },
  { name: 'text before and after', input: 'Calling: [now()] done.', content: 'Calling:  done.', calls: [NOW] },
  {
    name: 'python_start / python_end tags',
    input: '<|python_start|>[get_weather(city="Paris", days=3)]<|python_end|>',
    content: '',
    calls: [WEATHER],
  },
  { name: 'fenced', input: '```python\n[now()]\n```\nok', content: 'ok', calls: [NOW] },
  { name: 'positional arguments: text', input: '[f(1)]', content: '[f(1)]', calls: [] },
  { name: 'empty list: text', input: 'x = []', content: 'x = []', calls: [] },
  { name: 'cut off inside a call: text', input: '[get_weather(city="Par', content: '[get_weather(city="Par', calls: [] },
  {
    name: 'cut off after a complete call: the call stands',
    input: '[now(), get_weather(ci',
    content: ', get_weather(ci',
    calls: [NOW],
  },
];
