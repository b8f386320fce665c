// Grammar-constrained decoding: what the engine worker uses, and the data a constrained job carries.
export { buildVocabIndex, loadVocabIndex, packTokenizer, VocabIndex } from './vocab-index.js';
export { compileGrammar, GrammarError, ToolGrammar, type GrammarState } from './tool-call-grammar.js';
export type { GrammarConstraint, GrammarIR } from './ir.js';
export { compileIR } from './compile-ir.js';
export { SchemaError } from './errors.js';
export { maskLogits } from './token-mask.js';
