// Grammar-constrained decoding: the output must match a grammar (for tool_choice `required` and
// `{type: function, function: {name}}`: one or more tool calls in the model's wire format, each
// naming an allowed tool with arguments valid for its schema, then an end-of-turn token).
//
// The grammar arrives as data (ir.ts: the main thread builds it, src/chat/tool-formats/); the
// worker compiles it against the model's VocabIndex. Compiled grammars are kept per vocabulary and
// grammar, so a client that repeats its tool list reuses the grammar and its cached masks.

import { compileIR } from './compile-ir.js';
import { GrammarError, SchemaError } from './errors.js';
import type { GrammarConstraint } from './ir.js';
import { feed } from './matcher.js';
import { ACCEPTED, enter, EOS, Frame, type GNode } from './nodes.js';
import { applyMaskEntry, buildMaskEntry, frameKey, MaskCache, maskFrame } from './token-mask.js';
import type { VocabIndex } from './vocab-index.js';

export { GrammarError, SchemaError };

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
    const top = maskFrame(state);
    const cache = top.node.shared ? this.vocab.sharedMasks : this.masks;
    const key = frameKey(top, this.vocab.maxTokenBytes);
    let entry = cache.get(key);
    if (!entry) {
      entry = buildMaskEntry(this.vocab.trie, this.vocab.size, top);
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

/** Compiled grammars per vocabulary, by constraint. */
const compiled = new WeakMap<VocabIndex, Map<string, ToolGrammar>>();
const KEEP_PER_VOCAB = 32;

/**
 * The compiled grammar of `constraint`, or null when it cannot be built (tools the format cannot
 * tell apart, say: fam1 names containing `>`); decoding stays unconstrained then. A SchemaError
 * (the user's schema, regex or grammar is wrong: checkConstraint should have refused it) is thrown.
 */
export function compileGrammar(constraint: GrammarConstraint, vocab: VocabIndex): ToolGrammar | null {
  const key = JSON.stringify([constraint.root, constraint.endTokenIds]);
  let byKey = compiled.get(vocab);
  if (!byKey) compiled.set(vocab, (byKey = new Map()));
  const hit = byKey.get(key);
  if (hit) {
    // Re-insert so the map's order is least recently used first.
    byKey.delete(key);
    byKey.set(key, hit);
    return hit;
  }
  let root: GNode;
  try {
    root = compileIR(constraint.root);
  } catch (err) {
    if (err instanceof GrammarError && !(err instanceof SchemaError)) return null;
    throw err;
  }
  const grammar = new ToolGrammar(root, vocab, constraint.endTokenIds);
  if (byKey.size >= KEEP_PER_VOCAB) byKey.delete(byKey.keys().next().value!);
  byKey.set(key, grammar);
  return grammar;
}
