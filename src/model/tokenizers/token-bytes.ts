// The bytes a token contributes to the output text, recovered through the tokenizer's own decode.
//
// Byte-level BPE and SentencePiece byte-fallback vocabularies hold tokens that are only part of a
// multi-byte UTF-8 character; they decode alone as U+FFFD. Their raw bytes are read from the
// token's spelling instead (GPT-2's byte alphabet, or `<0xAB>`). Text is taken from
// decode([ref, id]) minus decode([ref]) so that SentencePiece's "strip the leading space of the
// first token" does not eat a token's space. Used for logprob `bytes` (Tokenizer.tokenBytes) and
// by the grammar's vocabulary index (src/engine/grammar/token-bytes.ts).

/** What working out a token's bytes needs from a tokenizer. */
export interface TokenDecoder {
  encode(text: string): number[];
  decode(ids: number[]): string;
  idToToken(id: number): string | undefined;
  readonly specialTokenIds: ReadonlySet<number>;
}

const utf8 = new TextEncoder();
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false });

/** The reference token decoded in front of each token, and its own text. */
export interface TokenBytesContext {
  ref: number | null;
  base: string;
}

/** An ordinary ASCII letter token to decode in front of each token (null when there is none), and its text. */
export function tokenBytesContext(tokenizer: TokenDecoder): TokenBytesContext {
  const ids = tokenizer.encode('a');
  const ref = ids.length !== 1 || tokenizer.specialTokenIds.has(ids[0]) ? null : ids[0];
  return { ref, base: ref === null ? '' : tokenizer.decode([ref]) };
}

/**
 * The bytes token `id` adds to the text: the UTF-8 of its text, or its raw bytes when it is part
 * of a character. Null for an id with no token, and for a token that decodes to U+FFFD but whose
 * spelling does not give bytes that decode to the same text.
 */
export function tokenRawBytes(tokenizer: TokenDecoder, id: number, ctx: TokenBytesContext): Uint8Array | null {
  const token = tokenizer.idToToken(id);
  if (token === undefined) return null;
  let text = tokenizer.decode([id]);
  if (ctx.ref !== null && !tokenizer.specialTokenIds.has(id)) {
    const both = tokenizer.decode([ctx.ref, id]);
    if (both.startsWith(ctx.base)) text = both.slice(ctx.base.length);
  }
  return text.includes('\uFFFD') ? spelledBytes(token, text) : utf8.encode(text);
}

/**
 * Raw bytes of a token that decodes to (part of) an invalid UTF-8 sequence: a SentencePiece byte
 * token `<0xAB>`, or a byte-level BPE token spelled in the GPT-2 byte alphabet. Null when the
 * spelling is neither, or when its bytes do not decode to the text the tokenizer gave.
 */
function spelledBytes(token: string, text: string): Uint8Array | null {
  const hex = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
  if (hex) return Uint8Array.of(parseInt(hex[1], 16));
  const bytes = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const b = BYTE_OF_CHAR.get(token.charCodeAt(i));
    if (b === undefined) return null;
    bytes[i] = b;
  }
  // Decoders differ in how many U+FFFD a broken sequence yields; compare with runs collapsed.
  const collapse = (s: string) => s.replace(/\uFFFD+/g, '\uFFFD');
  return collapse(lenientUtf8.decode(bytes)) === collapse(text) ? bytes : null;
}

/** GPT-2's bytes_to_unicode, inverted: the printable character standing for each byte. */
const BYTE_OF_CHAR: ReadonlyMap<number, number> = (() => {
  const map = new Map<number, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    map.set(printable ? b : 256 + extra++, b);
  }
  return map;
})();
