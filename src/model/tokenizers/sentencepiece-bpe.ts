// tokenizer.json objects for SentencePiece BPE vocabularies (Llama 2, Mistral v1, TinyLlama stories: GGUF
// tokenizer.ggml.model = "llama", or a tokenizer.model file).
//
// SentencePiece BPE (and llama.cpp's SPM tokenizer) repeatedly merges the adjacent pair whose joined text is
// the vocabulary piece with the highest score, leftmost first on ties; characters no piece covers fall back
// to <0xXX> byte pieces. That is exactly BPE with merge ranks ordered by the score of the merged piece, which
// is how Hugging Face converts these vocabularies too, so the merge loop itself is left to
// @huggingface/tokenizers (its BPE is a heap-based port of the llama SPM loop, ties broken leftmost).
import type { AddedTokenJson, TokenizerJson } from './byte-level-bpe.js';

/** Piece types, numbered as SentencePiece and GGUF tokenizer.ggml.token_type both number them. */
export const PIECE_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export interface SentencePieceVocab {
  pieces: string[];
  scores: ArrayLike<number>;
  /** PIECE_TYPE per piece; missing means all NORMAL. */
  types?: ArrayLike<number>;
  /** Prefix the text with a space ("▁") before tokenizing, as SentencePiece's add_dummy_prefix does. */
  addSpacePrefix: boolean;
  unkId: number | null;
}

const SPACE = '\u2581'; // "▁", SentencePiece's visible space

/**
 * Merge rules for a score-ranked vocabulary: every split of a NORMAL piece into two parts that can exist
 * as symbols (a single character, or itself a NORMAL piece), ordered by the piece's score, best first.
 */
function mergesByScore(vocab: SentencePieceVocab): [string, string][] {
  const type = (id: number) => vocab.types?.[id] ?? PIECE_TYPE.NORMAL;
  const normal = new Map<string, number>();
  vocab.pieces.forEach((p, id) => {
    if (type(id) === PIECE_TYPE.NORMAL && !normal.has(p)) normal.set(p, id);
  });
  const isSymbol = (chars: string[]) => chars.length === 1 || normal.has(chars.join(''));
  const rules: { left: string; right: string; score: number; id: number; leftId: number; rightId: number }[] = [];
  for (const [piece, id] of normal) {
    const chars = Array.from(piece);
    for (let i = 1; i < chars.length; i++) {
      const l = chars.slice(0, i);
      const r = chars.slice(i);
      if (!isSymbol(l) || !isSymbol(r)) continue;
      const left = l.join('');
      const right = r.join('');
      rules.push({
        left,
        right,
        score: vocab.scores[id],
        id,
        leftId: normal.get(left) ?? Infinity,
        rightId: normal.get(right) ?? Infinity,
      });
    }
  }
  rules.sort((a, b) => b.score - a.score || a.id - b.id || a.leftId - b.leftId || a.rightId - b.rightId);
  return rules.map((r) => [r.left, r.right]);
}

/** The tokenizer.json object of a SentencePiece BPE vocabulary, in the form of HF's legacy Llama tokenizer. */
export function sentencePieceBpeTokenizerJson(vocab: SentencePieceVocab): TokenizerJson {
  const type = (id: number) => vocab.types?.[id] ?? PIECE_TYPE.NORMAL;
  const vocabMap: Record<string, number> = {};
  const addedTokens: AddedTokenJson[] = [];
  let hasBytes = false;
  vocab.pieces.forEach((piece, id) => {
    const t = type(id);
    if (t === PIECE_TYPE.UNUSED || piece in vocabMap) return;
    vocabMap[piece] = id;
    if (t === PIECE_TYPE.BYTE) hasBytes = true;
    // Control and unknown pieces are special; user-defined ones are matched whole in the text but kept on decode.
    if (t === PIECE_TYPE.CONTROL || t === PIECE_TYPE.UNKNOWN || t === PIECE_TYPE.USER_DEFINED) {
      addedTokens.push({
        id,
        content: piece,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: t !== PIECE_TYPE.USER_DEFINED,
      });
    }
  });
  const replaceSpace = { type: 'Replace', pattern: { String: ' ' }, content: SPACE };
  const decoders: object[] = [{ type: 'Replace', pattern: { String: SPACE }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }];
  if (vocab.addSpacePrefix) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    // The space prefix goes on every run of text between special tokens, as llama.cpp and HF's legacy Llama do.
    normalizer: vocab.addSpacePrefix
      ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SPACE }, replaceSpace] }
      : replaceSpace,
    pre_tokenizer: null,
    post_processor: null,
    decoder: { type: 'Sequence', decoders },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: vocab.unkId !== null ? vocab.pieces[vocab.unkId] : null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: hasBytes,
      ignore_merges: false,
      vocab: vocabMap,
      merges: mergesByScore(vocab),
    },
  };
}
