// Incremental detokenization: token ids arrive a few at a time, text leaves as soon as it is
// final. Byte-level vocabularies split one character over several tokens (an emoji can take
// three), and decoding such a partial sequence yields U+FFFD. So the text is never decoded token
// by token: a short window is decoded with and without the new tokens and the difference is
// emitted, but only once it does not end in U+FFFD (the rest of the character is still coming).
// Decoding a window with context (rather than the new ids alone) also keeps the leading-space
// rules of SentencePiece-style decoders right.

/** What the detokenizer needs from a tokenizer. */
export interface IdDecoder {
  decode(ids: number[], options?: { skipSpecialTokens?: boolean }): string;
}

const REPLACEMENT = '\uFFFD';

/** How many of the context's last ids are decoded before the output: enough for any leading-space rule. */
const CONTEXT_IDS = 4;

export class IncrementalDetokenizer {
  private readonly ids: number[] = [];
  /** Start of the decode window: the context the next difference is taken against. */
  private prefixOffset = 0;
  /** Ids before this have been emitted as text. */
  private readOffset = 0;

  /**
   * `context`: ids the output continues (a plain prompt), its last ones decoded as the first window's
   * left side and never emitted, so the first generated token keeps the space a SentencePiece
   * decoder strips at the start of a text (" with" after "…the park", not "with").
   */
  constructor(
    private readonly decoder: IdDecoder,
    private readonly skipSpecialTokens = true,
    context: readonly number[] = [],
  ) {
    for (const id of context.slice(-CONTEXT_IDS)) this.ids.push(id);
    this.readOffset = this.ids.length;
  }

  /** Adds generated ids; returns the text that became final (possibly ''). */
  push(newIds: readonly number[]): string {
    for (const id of newIds) this.ids.push(id);
    const prefixText = this.decode(this.prefixOffset, this.readOffset);
    const fullText = this.decode(this.prefixOffset, this.ids.length);
    if (fullText.length <= prefixText.length || fullText.endsWith(REPLACEMENT)) return '';
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return fullText.slice(prefixText.length);
  }

  /** End of output: releases held text, including a character that will never be completed. */
  finish(): string {
    if (this.readOffset === this.ids.length) return '';
    const prefixText = this.decode(this.prefixOffset, this.readOffset);
    const fullText = this.decode(this.prefixOffset, this.ids.length);
    this.prefixOffset = this.readOffset = this.ids.length;
    return fullText.slice(prefixText.length);
  }

  private decode(from: number, to: number): string {
    if (from >= to) return '';
    return this.decoder.decode(this.ids.slice(from, to), { skipSpecialTokens: this.skipSpecialTokens });
  }
}
