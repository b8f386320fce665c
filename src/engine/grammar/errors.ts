// The one error the grammar code throws.

/** A grammar that cannot be built (ambiguous literals), or a token the grammar does not allow. */
export class GrammarError extends Error {}
