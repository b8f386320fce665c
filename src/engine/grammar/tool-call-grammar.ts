// Grammar-constrained decoding for tool_choice `required` and `{type: function, function: {name}}`:
// the output must be one or more tool calls in the model's wire format, each naming an allowed
// tool with arguments valid for its schema, then an end-of-turn token. Optionally free reasoning
// comes first, up to a marker such as `</think>`.
//
// The spec is plain data (it crosses from the main thread to the engine worker); the worker
// compiles it against the model's VocabIndex. Compiled grammars are kept per vocabulary and spec,
// so a client that repeats its tool list reuses the grammar and its cached masks.

import { GrammarError } from './errors.js';
import { feed } from './matcher.js';
import { bareJson } from './format-bare-json.js';
import { fam1 } from './format-fam1.js';
import { fam2 } from './format-fam2.js';
import { fam3 } from './format-fam3.js';
import { fam4Xml } from './format-fam4-xml.js';
import { glm4 } from './format-glm4.js';
import { hermes } from './format-hermes.js';
import { llama3Json } from './format-llama3-json.js';
import { pythonic } from './format-pythonic.js';
import { bounded } from './repeat.js';
import { MarkerDfa } from './literals.js';
import { ACCEPTED, alt, altSet, END, enter, EOS, Frame, seq, TAG_GAP, until, type GNode } from './nodes.js';
import { applyMaskEntry, buildMaskEntry, frameKey, MaskCache } from './token-mask.js';
import type { VocabIndex } from './vocab-index.js';

export interface ToolDef {
  name: string;
  /** The tool's JSON schema for its arguments (OpenAI `function.parameters`); absent = any object. */
  parameters?: unknown;
}

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
 * One wire format. A new format is one more file and one entry in FORMATS. Most formats give
 * `call` (one whole call, starting with `opener`): calls then follow each other, whitespace
 * between, and the end comes after any of them. Formats whose calls share a wrapper or a separator
 * (a list, a block, `;`) give `calls` instead: the whole output, 1..max calls (max 0 = no limit),
 * ending in END.
 */
export interface ToolCallFormat {
  /** The text the calls start with (for `call`: it tells "another call" from "end of turn"). */
  opener: string;
  call?(tools: readonly ToolDef[]): GNode;
  calls?(tools: readonly ToolDef[], max: number): GNode;
}

const FORMATS: Record<string, ToolCallFormat> = {
  hermes,
  fam1_coder: fam1,
  fam1_xml: fam1,
  fam2,
  fam3,
  fam4_xml: fam4Xml,
  bare_json: bareJson,
  llama3_json: llama3Json,
  glm4,
  pythonic,
};

export { GrammarError };

/** The matcher state after some output; immutable, so a state can be kept and reused. */
export type GrammarState = Frame;

export class ToolGrammar {
  /** Masks of this grammar's own nodes (shared nodes use vocab.sharedMasks). */
  private readonly masks = new MaskCache(2048);
  private readonly endTokenIds: readonly number[];
  private readonly endSet: ReadonlySet<number>;

  constructor(
    private readonly root: GNode,
    readonly vocab: VocabIndex,
    endTokenIds: readonly number[],
  ) {
    this.endTokenIds = [...new Set(endTokenIds)].filter((id) => id >= 0);
    this.endSet = new Set(this.endTokenIds);
  }

  start(): GrammarState {
    return enter(this.root, null);
  }

  /** True once the output may end here (an end token is allowed), or has ended. */
  isComplete(state: GrammarState): boolean {
    return state === ACCEPTED || feed(state, EOS) !== null;
  }

  /**
   * Writes the mask of tokens allowed next: out[id] = 1 allowed, 0 not. `out` is typically as
   * long as the logits row (ids past the vocabulary come out 0).
   */
  allowedTokens(state: GrammarState, out: Uint8Array): void {
    out.fill(0);
    if (state === ACCEPTED) return;
    const cache = state.node.shared ? this.vocab.sharedMasks : this.masks;
    const key = frameKey(state);
    let entry = cache.get(key);
    if (!entry) {
      entry = buildMaskEntry(this.vocab.trie, this.vocab.size, state);
      cache.set(key, entry);
    }
    applyMaskEntry(this.vocab.trie, this.vocab.size, state, entry, out);
    const canEnd = this.isComplete(state);
    for (const id of this.endTokenIds) out[id] = canEnd ? 1 : 0;
  }

  /** The state after token `id`, or null when the token is not allowed. */
  tryAdvance(state: GrammarState, id: number): GrammarState | null {
    if (this.endSet.has(id)) return this.isComplete(state) ? ACCEPTED : null;
    const bytes = this.vocab.tokenBytes(id);
    if (bytes.length === 0) return null;
    let st: Frame | null = state;
    for (let i = 0; i < bytes.length && st !== null; i++) st = feed(st, bytes[i]);
    return st;
  }

  /** The state after token `id`; throws GrammarError when the token is not allowed. */
  advance(state: GrammarState, id: number): GrammarState {
    const next = this.tryAdvance(state, id);
    if (next === null) throw new GrammarError(`token ${id} is not allowed by the tool-call grammar here`);
    return next;
  }
}

/** Compiled grammars per vocabulary, by spec. */
const compiled = new WeakMap<VocabIndex, Map<string, ToolGrammar>>();
const KEEP_PER_VOCAB = 32;

/**
 * The grammar for `spec`, or null when its format has no grammar or its tools cannot be told apart
 * in that format (decode unconstrained then).
 */
export function compileToolGrammar(spec: ToolGrammarSpec, vocab: VocabIndex): ToolGrammar | null {
  if (!hasToolGrammar(spec.format) || spec.tools.length === 0) return null;
  const format = FORMATS[spec.format];
  const key = JSON.stringify([spec.format, spec.tools, spec.endTokenIds, spec.afterReasoningEnd ?? null, spec.maxCalls ?? 0]);
  let byKey = compiled.get(vocab);
  if (!byKey) compiled.set(vocab, (byKey = new Map()));
  const hit = byKey.get(key);
  if (hit) {
    // Re-insert so the map's order is least recently used first.
    byKey.delete(key);
    byKey.set(key, hit);
    return hit;
  }
  const parts: GNode[] = [];
  if (spec.afterReasoningEnd) parts.push(reasoningUntil(spec.afterReasoningEnd));
  try {
    parts.push(TAG_GAP, calls(format, spec.tools, spec.maxCalls ?? 0));
  } catch (err) {
    // Tools the format cannot tell apart (fam1 names containing `>`, say): decode unconstrained.
    if (err instanceof GrammarError) return null;
    throw err;
  }
  const grammar = new ToolGrammar(seq(parts), vocab, spec.endTokenIds);
  if (byKey.size >= KEEP_PER_VOCAB) byKey.delete(byKey.keys().next().value!);
  byKey.set(key, grammar);
  return grammar;
}

/** Whether `format` (a tool-call parser name) has a grammar. */
export function hasToolGrammar(format: string): boolean {
  return Object.hasOwn(FORMATS, format);
}

/** One call, then up to max - 1 more (unbounded when max is 0), whitespace between, then the end. */
function calls(format: ToolCallFormat, tools: readonly ToolDef[], max: number): GNode {
  if (format.calls) return format.calls(tools, max);
  const opener = new TextEncoder().encode(format.opener)[0];
  const call = format.call!(tools); // one node graph; every use keeps its own progress in its frames
  return bounded(max, (again) => {
    if (again === null) return seq([call, TAG_GAP, END]);
    // "Another call or the end", decided by the next byte.
    const more = alt();
    altSet(more, [opener], again);
    more.kids[EOS] = END;
    return seq([call, TAG_GAP, more]);
  });
}

const reasoningNodes = new Map<string, GNode>();

/** Free text up to `marker`; shared per marker so its (large) mask is computed once per vocabulary. */
function reasoningUntil(marker: string): GNode {
  let node = reasoningNodes.get(marker);
  if (!node) reasoningNodes.set(marker, (node = until(new MarkerDfa([marker], []), true)));
  return node;
}
