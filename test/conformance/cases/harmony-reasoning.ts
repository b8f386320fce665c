// harmony (GPT-OSS): the reasoning splitter alone, and splitter + tool-call parser (pipeline order),
// on outputs as GPT-OSS writes them after its generation prompt `<|start|>assistant`. `<|call|>` and
// `<|return|>` are EOS tokens the pipeline usually hides: cases end with and without them.

import type { PipelineCase, ReasoningCase } from './reasoning.js';

/** The gpt-oss template's generation prompt (after the system, developer and user messages). */
const PROMPT = '<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant';
/** A prompt that leaves an analysis message open for the model. */
const OPENED = '<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>analysis<|message|>';
const A = '<|start|>assistant';
const weatherCall = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris","days":3}';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const NOW = { name: 'now', arguments: {} };

export const harmonyReasoningCases: ReasoningCase[] = [
  {
    name: 'harmony: analysis, then the final answer',
    prompt: PROMPT,
    input: `<|channel|>analysis<|message|>User asks simple.<|end|>${A}<|channel|>final<|message|>Hello!<|return|>`,
    reasoning: 'User asks simple.',
    text: 'Hello!',
    format: 'harmony',
  },
  {
    name: 'harmony: the prompt opened the analysis message',
    prompt: OPENED,
    input: `Short.<|end|>${A}<|channel|>final<|message|>Hi.`,
    reasoning: 'Short.',
    text: 'Hi.',
    format: 'harmony',
  },
  {
    name: 'harmony: output without any framing is text',
    prompt: PROMPT,
    input: 'Just text, no channels.',
    reasoning: '',
    text: 'Just text, no channels.',
    format: 'harmony',
  },
  {
    name: 'harmony: a final answer without analysis, ended by EOS',
    prompt: PROMPT,
    input: '<|channel|>final<|message|>Paris is sunny.',
    reasoning: '',
    text: 'Paris is sunny.',
    format: 'harmony',
  },
  {
    name: 'harmony: truncated in the analysis channel',
    prompt: PROMPT,
    input: '<|channel|>analysis<|message|>We need to think about',
    reasoning: 'We need to think about',
    text: '',
    format: 'harmony',
  },
  {
    name: 'harmony: truncated in the final channel',
    prompt: PROMPT,
    input: `<|channel|>analysis<|message|>Easy.<|end|>${A}<|channel|>final<|message|>The answer is`,
    reasoning: 'Easy.',
    text: 'The answer is',
    format: 'harmony',
  },
  {
    name: 'harmony: truncated inside a header',
    prompt: PROMPT,
    input: `<|channel|>analysis<|message|>Easy.<|end|>${A}<|channel|>fin`,
    reasoning: 'Easy.',
    text: '',
    format: 'harmony',
  },
  {
    name: 'harmony: two analysis messages and a preamble are joined with blank lines',
    prompt: PROMPT,
    input:
      `<|channel|>analysis<|message|>First.<|end|>${A}<|channel|>commentary<|message|>Looking it up.<|end|>` +
      `${A}<|channel|>analysis<|message|>Second.<|end|>${A}<|channel|>final<|message|>Done.`,
    reasoning: 'First.\n\nSecond.',
    text: 'Looking it up.\n\nDone.',
    format: 'harmony',
  },
  {
    name: 'harmony: a missing <|end|> before the next message',
    prompt: PROMPT,
    input: `<|channel|>analysis<|message|>Think.${A}<|channel|>final<|message|>Ok.`,
    reasoning: 'Think.',
    text: 'Ok.',
    format: 'harmony',
  },
  {
    name: 'harmony: <|return|> reaching the text ends the output',
    prompt: PROMPT,
    input: `<|channel|>final<|message|>Bye.<|return|>${A}<|channel|>final<|message|>Again.`,
    reasoning: '',
    text: 'Bye.',
    format: 'harmony',
  },
  {
    name: 'harmony: a message to a built-in tool is reasoning',
    prompt: PROMPT,
    input: '<|channel|>analysis to=python code<|message|>print(2+2)',
    reasoning: 'print(2+2)',
    text: '',
    format: 'harmony',
  },
  {
    name: 'harmony: tag-like text inside the final answer is kept',
    prompt: PROMPT,
    input: '<|channel|>final<|message|>Use <think> and <|b|> and to=x here.',
    reasoning: '',
    text: 'Use <think> and <|b|> and to=x here.',
    format: 'harmony',
  },
];

export const harmonyPipelineCases: PipelineCase[] = [
  {
    name: 'harmony: analysis, then a tool call',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Need to call get_weather.<|end|>${A}${weatherCall}<|call|>`,
    reasoning: 'Need to call get_weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'harmony: analysis, then a tool call ended by EOS',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Need to call get_weather.<|end|>${A}${weatherCall}`,
    reasoning: 'Need to call get_weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'harmony: two tool calls',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Two calls.<|end|>${A}${weatherCall}<|end|>${A}<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}`,
    reasoning: 'Two calls.',
    content: '',
    calls: [WEATHER, NOW],
  },
  {
    name: 'harmony: a preamble, then a call',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Tell the user first.<|end|>${A}<|channel|>commentary<|message|>Let me check the weather.<|end|>${A}${weatherCall}`,
    reasoning: 'Tell the user first.',
    content: 'Let me check the weather.',
    calls: [WEATHER],
  },
  {
    name: 'harmony: the recipient before the channel',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Call it.<|end|>${A} to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris","days":3}<|call|>`,
    reasoning: 'Call it.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'harmony: the recipient before the channel, at the start of the output',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: ' to=functions.now<|channel|>commentary json<|message|>{}<|call|>',
    reasoning: '',
    content: '',
    calls: [NOW],
  },
  {
    name: 'harmony: analysis again after a tool result, then the answer',
    prompt: `${PROMPT}${weatherCall}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|><|start|>assistant`,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>It is sunny.<|end|>${A}<|channel|>final<|message|>Sunny in Paris.<|return|>`,
    reasoning: 'It is sunny.',
    content: 'Sunny in Paris.',
    calls: [],
  },
  {
    name: 'harmony: a call truncated in its arguments (max_tokens)',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: `<|channel|>analysis<|message|>Call.<|end|>${A}<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query":"weather in Par`,
    reasoning: 'Call.',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'weather in Par' } }],
  },
  {
    // A whole `<|end|>` would end the message, as the token does in vLLM's token-level parser.
    name: 'harmony: tag prefixes inside the arguments stay in them',
    prompt: PROMPT,
    parser: 'harmony',
    format: 'harmony',
    input: '<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>{"path":"h.md","content":"<|start and <|end"}',
    reasoning: '',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'h.md', content: '<|start and <|end' } }],
  },
];
