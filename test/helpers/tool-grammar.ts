// Tool-call grammars as a constrained request gets them: the format's grammar data built on the
// main thread (src/chat/tool-formats/constraint.ts), cloned across to the worker, compiled there
// against the vocabulary.
import { toolGrammarConstraint, type ToolGrammarSpec } from '../../src/chat/tool-formats/constraint.js';
import { compileGrammar, type ToolGrammar, type VocabIndex } from '../../src/engine/grammar/index.js';

export { toolGrammarConstraint };
export type { ToolGrammarSpec };
export type { ToolDef } from '../../src/chat/tool-formats/format.js';

/** The compiled grammar, or null where the server decodes unconstrained. */
export function compileToolGrammar(spec: ToolGrammarSpec, vocab: VocabIndex): ToolGrammar | null {
  const constraint = toolGrammarConstraint(spec);
  // The job crosses to the engine worker by structured clone.
  return constraint ? compileGrammar(structuredClone(constraint), vocab) : null;
}
