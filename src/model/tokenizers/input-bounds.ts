// Bounds on tokenizer input that hold before any tokenization, so a prompt that cannot fit the
// context is refused without doing the work, and no single word can take unbounded time or memory.
//
// maxInputCharsPerToken: the most UTF-16 code units of input text one token can stand for. A token
// covers at most its own length of (normalized) text: a byte-level token string has one character
// per byte, and a text has at least as many UTF-8 bytes as UTF-16 units; a SentencePiece piece is
// its text with `▁` for a space; a byte-fallback token `<0xAB>` covers one byte. So with no
// normalizer, `chars > maxSeqLen × bound` can never fit. A Unicode normalization form can shrink a
// text (NFC composes a base and up to three marks into one character; NFKC also folds a
// two-unit mathematical letter into one ASCII letter), so those multiply the bound by a slack that
// covers the worst case (see NORMALIZER_SLACK). Where a tokenizer can drop text or fold a run of
// any length into one token (Strip/StripAccents/Precompiled normalizers, whitespace-removing
// pre-tokenizers, a fused unknown token, an added token that swallows whitespace, WordLevel and
// Unigram models), no such bound holds and it is Infinity: the per-word cap and the worker pool
// still bound the work.

type Json = Record<string, unknown>;

/**
 * How much a normalizer can shrink a text, in UTF-16 units, per unit of what comes out (1 = never
 * shrinks; missing = can shrink without bound). NFC/NFD: a composed character from up to four code
 * points (Greek with breathing, accent and iota subscript). NFKC/NFKD: also a supplementary
 * character (two units) folded to one before composing: at most five. Generous on purpose.
 */
const NORMALIZER_SLACK: Record<string, number> = {
  NFC: 4,
  NFD: 4,
  NFKC: 8,
  NFKD: 8,
  Lowercase: 2,
  Prepend: 1,
};

/** Pre-tokenizers that keep every character (they only split, or add a prefix). */
const KEEPING_PRE_TOKENIZERS = new Set(['ByteLevel', 'Metaspace', 'Digits', 'UnicodeScripts', 'Punctuation', 'Split', 'Sequence']);

function normalizerSlack(n: Json | null | undefined): number {
  if (!n) return 1;
  const type = String(n.type);
  if (type === 'Sequence') return ((n.normalizers ?? []) as Json[]).reduce((s, m) => s * normalizerSlack(m), 1);
  if (type === 'Replace') {
    // Replace(pattern → content) shrinks nothing when the content is at least as long as a match.
    const pattern = (n.pattern ?? {}) as Json;
    const content = String(n.content ?? '');
    return typeof pattern.String === 'string' && content.length >= pattern.String.length && content.length > 0 ? 1 : Infinity;
  }
  return NORMALIZER_SLACK[type] ?? Infinity;
}

function keepsText(p: Json | null | undefined): boolean {
  if (!p) return true;
  const type = String(p.type);
  if (!KEEPING_PRE_TOKENIZERS.has(type)) return false;
  if (type === 'Sequence') return ((p.pretokenizers ?? []) as Json[]).every(keepsText);
  if (type === 'Split' || type === 'Punctuation') return p.behavior !== 'Removed';
  return true;
}

function hasAllByteTokens(vocab: unknown): boolean {
  if (!vocab || typeof vocab !== 'object' || Array.isArray(vocab)) return false;
  for (let b = 0; b < 256; b++) if (!(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>` in vocab)) return false;
  return true;
}

/** The longest string (UTF-16 units) among a vocabulary's tokens. */
function longestToken(vocab: unknown): number {
  let max = 0;
  if (Array.isArray(vocab)) {
    for (const entry of vocab) {
      const t = Array.isArray(entry) ? entry[0] : entry;
      if (typeof t === 'string' && t.length > max) max = t.length;
    }
  } else if (vocab && typeof vocab === 'object') {
    for (const t of Object.keys(vocab)) if (t.length > max) max = t.length;
  }
  return max;
}

/** The most input UTF-16 units one token can stand for, for a tokenizer.json object (Infinity: no bound). */
export function maxInputCharsPerToken(tokenizerJson: object): number {
  const json = tokenizerJson as Json;
  const model = (json.model ?? {}) as Json;
  if (model.type !== 'BPE') return Infinity;
  // A fused unknown token stands for a whole run of unknown characters; byte fallback leaves none
  // unknown only when the vocabulary has all 256 byte tokens (TinyStories' has not).
  if (model.unk_token != null && model.fuse_unk === true && !(model.byte_fallback === true && hasAllByteTokens(model.vocab)))
    return Infinity;
  if (!keepsText(json.pre_tokenizer as Json | null)) return Infinity;
  let max = longestToken(model.vocab);
  // An unfused unknown token stands for one character: at most two UTF-16 units.
  if (model.unk_token != null) max = Math.max(max, 2);
  for (const t of (json.added_tokens ?? []) as Json[]) {
    // lstrip/rstrip: the token also takes the whitespace beside it, however long.
    if (t.lstrip === true || t.rstrip === true) return Infinity;
    max = Math.max(max, String(t.content).length);
  }
  const slack = normalizerSlack(json.normalizer as Json | null);
  return max * slack;
}

// ---------------------------------------------------------------------------------------------------------
// The per-word cap

/**
 * The longest run of text without whitespace that is tokenized in one piece. A BPE word costs time
 * and memory that grow faster than its length (the merge queue of a 16 MiB word exhausted the heap),
 * while real words, identifiers, URLs and even long base64 lines stay far below 4096 characters, and
 * a cut every 4096 characters changes at most one token boundary per cut. Text without such a run
 * tokenizes exactly as before.
 */
export const MAX_WORD_CHARS = 4096;

function isWhitespace(c: number): boolean {
  return (
    c === 0x20 ||
    (c >= 0x09 && c <= 0x0d) ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/**
 * Where to cut `text` so that no piece holds a whitespace-free run longer than `cap`: cut offsets
 * in increasing order (empty when no run is that long, the usual case). Cuts fall on code-point
 * boundaries and never inside an occurrence of one of `addedTokens` written in the text.
 */
export function wordCapCuts(text: string, addedTokens: readonly string[], cap = MAX_WORD_CHARS): number[] {
  const cuts: number[] = [];
  let runStart = 0;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && !isWhitespace(text.charCodeAt(i))) continue;
    // A run [runStart, i) without whitespace.
    let from = runStart;
    while (i - from > cap) {
      const cut = safeCut(text, from, from + cap, addedTokens);
      if (cut >= i) break; // an added token reaching the run's end
      cuts.push(cut);
      from = cut;
    }
    runStart = i + 1;
  }
  return cuts;
}

/** A cut at or before `at` (after `from`) that splits no surrogate pair or added token; past the token when it would not advance. */
function safeCut(text: string, from: number, at: number, addedTokens: readonly string[]): number {
  let cut = at;
  for (let moved = true; moved;) {
    moved = false;
    for (const t of addedTokens) {
      if (t.length < 2) continue;
      // Only an occurrence starting in (cut - t.length, cut) spans the cut: look in that window.
      const w = Math.max(from, cut - t.length + 1);
      const hit = text.slice(w, cut + t.length - 1).indexOf(t);
      if (hit < 0 || w + hit >= cut) continue;
      const start = w + hit;
      if (start > from) {
        cut = start;
        moved = true;
      } else {
        return adjustSurrogate(text, start + t.length);
      }
    }
  }
  return adjustSurrogate(text, cut);
}

/** Not between the two units of a surrogate pair. */
function adjustSurrogate(text: string, cut: number): number {
  const c = text.charCodeAt(cut);
  return c >= 0xdc00 && c <= 0xdfff && cut > 0 ? cut - 1 : cut;
}
