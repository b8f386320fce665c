// Grammar-constrained decoding of tool calls: what the engine worker uses.
export { buildVocabIndex, loadVocabIndex, packTokenizer, VocabIndex } from './vocab-index.js';
export {
  compileToolGrammar,
  GrammarError,
  hasToolGrammar,
  ToolGrammar,
  type GrammarState,
  type ToolDef,
  type ToolGrammarSpec,
} from './tool-call-grammar.js';
export { maskLogits } from './token-mask.js';
