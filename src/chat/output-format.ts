// Structured outputs: a request's OutputFormat (response_format, guided_*, structured_outputs,
// Responses' text.format, Anthropic's output_config.format) → the grammar the engine enforces on
// the answer. With reasoning the think block stays free and the format starts after its close tag;
// with tools in `auto` mode the answer may also be tool calls, when the two start with different
// bytes (the matcher chooses by first byte).
import { checkConstraint, GrammarError, type GrammarConstraint, type GrammarIR } from '../engine/grammar/index.js';
import { choice, END, gbnfText, JSON_GAP, jsonValue, literalSwitch, regexText, seq, TAG_GAP, textUntil } from '../engine/grammar/ir.js';
import { invalidParam } from '../common/api-error.js';
import type { OutputFormat } from './request.js';

export interface OutputFormatSpec {
  format: OutputFormat;
  endTokenIds: number[];
  /** Free text up to this marker (a reasoning block's close tag) comes first. */
  afterReasoningEnd: string | null;
  /** Tool calls the answer may be instead (tools in `auto` mode), with the text they start with. */
  calls?: { ir: GrammarIR; opener: string } | null;
}

/** The answer's grammar and the bytes it can start with ('' when not known). */
function answer(format: OutputFormat): { ir: GrammarIR; first: string } {
  switch (format.type) {
    case 'json_object':
      return { ir: jsonValue({ type: 'object' }), first: '{' };
    case 'json_schema':
      return { ir: jsonValue(format.schema), first: jsonFirst(format.schema) };
    case 'regex':
      return { ir: regexText(format.pattern), first: '' };
    case 'choice':
      if (format.choices.length === 0) throw invalidParam(format.param, `'${format.param}' must list at least one choice.`);
      if (format.choices.some((c) => c === '')) throw invalidParam(format.param, `'${format.param}' must not contain an empty choice.`);
      return { ir: literalSwitch([...new Set(format.choices)]), first: '' };
    case 'grammar':
      return { ir: gbnfText(format.grammar), first: '' };
  }
}

/** `{` or `[` when every value the schema admits is an object or an array; else '' (unknown). */
function jsonFirst(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return '';
  const s = schema as Record<string, unknown>;
  if (s.type === 'object' || (s.type === undefined && typeof s.properties === 'object')) return '{';
  if (s.type === 'array') return '[';
  return '';
}

/**
 * The constraint for a structured-output request. Throws a 400 naming the request field when the
 * schema, regex or grammar cannot be enforced (an unsupported keyword, an unsatisfiable schema, a
 * syntax error): it is checked here, on the request's thread, before anything is queued.
 */
export function outputFormatConstraint(spec: OutputFormatSpec): GrammarConstraint {
  const { ir, first } = answer(spec.format);
  const isJson = spec.format.type === 'json_object' || spec.format.type === 'json_schema';
  let body: GrammarIR = isJson ? seq([JSON_GAP, ir, JSON_GAP, END]) : seq([ir, END]);
  const calls = spec.calls;
  // "A call or the answer", decided by the first byte: possible when the two start differently.
  const opener = calls ? (new TextEncoder().encode(calls.opener)[0] ?? -1) : -1;
  if (calls && first !== '' && !first.includes(String.fromCharCode(opener))) {
    body = seq([
      TAG_GAP,
      choice([
        [[opener], calls.ir],
        [first, seq([ir, JSON_GAP, END])],
      ]),
    ]);
  }
  const root = spec.afterReasoningEnd ? seq([textUntil(spec.afterReasoningEnd), body]) : body;
  try {
    checkConstraint(root, true);
  } catch (err) {
    if (err instanceof GrammarError)
      throw invalidParam(spec.format.param, `Invalid '${spec.format.param}': ${err.message.replace(/^grammar: /, '')}`);
    throw err;
  }
  return { root, endTokenIds: spec.endTokenIds };
}
