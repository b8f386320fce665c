// The tool-call grammar as a logits processor: masks every token the grammar does not allow next
// and follows the output through the grammar. Wraps whatever ToolGrammar the worker compiled for
// the job (start / allowedTokens / advance).
import { maskLogits, type GrammarState, type ToolGrammar } from '../grammar/index.js';
import type { LogitsProcessor } from './processor.js';

export class GrammarProcessor implements LogitsProcessor {
  private state: GrammarState;

  /** `mask`: scratch as long as a logits row, shared by every grammar in the worker (rows are processed one at a time). */
  constructor(
    private readonly grammar: ToolGrammar,
    private readonly mask: Uint8Array,
  ) {
    this.state = grammar.start();
  }

  process(logits: Float32Array): void {
    maskLogits(logits, this.allowed());
  }

  /** The tokens the grammar allows next (1 = allowed), in the shared scratch: read it before the next row. */
  allowed(): Uint8Array {
    this.grammar.allowedTokens(this.state, this.mask);
    return this.mask;
  }

  /** Throws GrammarError for a token the grammar does not allow here. */
  accept(token: number): void {
    this.state = this.grammar.advance(this.state, token);
  }
}
