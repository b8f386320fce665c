// The errors the grammar code throws.

/**
 * A grammar that cannot be built (ambiguous literals, a tool name a format cannot spell), or a
 * token the grammar does not allow. Where a tool-call grammar cannot be built, decoding stays
 * unconstrained.
 */
export class GrammarError extends Error {}

/**
 * The user's constraint itself is wrong or unsupported: an unknown or unsupported JSON Schema
 * keyword, an unsatisfiable schema, a dangling `$ref`, a bad regex or GBNF. The message names the
 * place (`at #/properties/a`, `line 3, column 7`). The server answers 400 rather than decoding
 * unconstrained.
 */
export class SchemaError extends GrammarError {}
