// The grammar the engine enforces for tool_choice `required` or a named function: one or more
// calls in the model's wire format, each naming an allowed tool with arguments valid for its
// schema, then an end-of-turn token; optionally free reasoning first, up to a marker such as
// `</think>`. Built here as data (src/engine/grammar/ir.ts) from the format's grammar; the engine
// worker compiles it against the vocabulary.

import { GrammarError } from '../../engine/grammar/errors.js';
import { bounded, choice, END, seq, TAG_GAP, textUntil, type GrammarConstraint, type GrammarIR } from '../../engine/grammar/ir.js';
import type { ToolCallGrammar, ToolDef } from './format.js';
import { toolFormat } from './registry.js';

export interface ToolGrammarSpec {
  /** The tool-call parser name (`hermes`, `fam1_coder`, …). */
  format: string;
  /** The tools the model may call: all of them for `required`, the named one for a forced function. */
  tools: ToolDef[];
  /** End-of-turn / EOS ids: allowed only where the grammar may end, and then only they are. */
  endTokenIds: number[];
  /**
   * When set, any text is allowed until this marker (e.g. `</think>`) has been generated; the
   * calls come after it. Only for prompts that leave a reasoning block open.
   */
  afterReasoningEnd?: string | null;
  /** Most calls in the turn; absent or 0 = no limit (a forced function uses 1). */
  maxCalls?: number;
}

/**
 * The constraint for `spec`, or null when its format is unknown, it has no tools, or its tools
 * cannot be told apart in that format (decoding stays unconstrained then).
 */
export function toolGrammarConstraint(spec: ToolGrammarSpec): GrammarConstraint | null {
  const calls = toolCallsIR(spec.format, spec.tools, spec.maxCalls ?? 0);
  if (calls === null) return null;
  const parts: GrammarIR[] = [];
  if (spec.afterReasoningEnd) parts.push(textUntil(spec.afterReasoningEnd));
  parts.push(TAG_GAP, calls.ir);
  return { root: seq(parts), endTokenIds: spec.endTokenIds };
}

/**
 * One to `maxCalls` calls (0: any number) in `format` and then the end of output, with the text
 * they start with; null when the format is unknown, there are no tools, or the format cannot tell
 * them apart (fam1 names containing `>`, say).
 */
export function toolCallsIR(format: string, tools: readonly ToolDef[], maxCalls: number): { ir: GrammarIR; opener: string } | null {
  const f = toolFormat(format);
  if (!f || tools.length === 0) return null;
  try {
    return { ir: calls(f.grammar, tools, maxCalls), opener: f.grammar.opener };
  } catch (err) {
    if (err instanceof GrammarError) return null;
    throw err;
  }
}

/** One call, then up to max - 1 more (unbounded when max is 0), whitespace between, then the end. */
function calls(grammar: ToolCallGrammar, tools: readonly ToolDef[], max: number): GrammarIR {
  if (grammar.calls) return grammar.calls(tools, max);
  const opener = new TextEncoder().encode(grammar.opener)[0];
  const call = grammar.call!(tools); // one subtree; every use keeps its own progress in its frames
  return bounded(max, (again) => {
    if (again === null) return seq([call, TAG_GAP, END]);
    // "Another call or the end", decided by the next byte.
    return seq([call, TAG_GAP, choice([[[opener], again]], END)]);
  });
}
