// The one error the grammar code throws.

/** A grammar that cannot be built (ambiguous literals), or a token the grammar does not allow. */
export class GrammarError extends Error {}

/** A schema, regex or grammar from the request that cannot be enforced as written: the client's error (400). */
export class SchemaError extends GrammarError {}
