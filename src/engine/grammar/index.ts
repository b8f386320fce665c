// Grammar-constrained decoding: what the engine worker uses, and the data a constrained job carries.
export { buildVocabIndex, loadVocabIndex, VocabIndex } from './vocab-index.js';
export { compileGrammar, GrammarError, SchemaError, ToolGrammar, type GrammarState } from './tool-call-grammar.js';
export { checkConstraint, compileIR } from './compile-ir.js';
export { gbnfText, jsonValue, regexText, type GrammarConstraint, type GrammarIR } from './ir.js';
export { maskLogits } from './token-mask.js';
