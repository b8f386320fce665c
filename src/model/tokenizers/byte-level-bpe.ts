// tokenizer.json objects for byte-level BPE vocabularies (GPT-2, Llama 3, Qwen2, SmolLM), built from a vocab
// and merge list so @huggingface/tokenizers can run them. Used for vocab.json + merges.txt directories and
// for GGUF files with tokenizer.ggml.model = "gpt2".

/** A tokenizer.json document, as @huggingface/tokenizers takes it. */
export type TokenizerJson = Record<string, unknown>;

export interface AddedTokenJson {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** Pre-tokenizer families, named after the llama.cpp pre-tokenizer types they reproduce. */
export type ByteLevelPreset = 'gpt2' | 'llama3' | 'qwen2' | 'smollm' | 'default';

// The split regexes as the models' tokenizer.json files write them (Oniguruma syntax, which the library translates).
const QWEN2_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// llama.cpp's fallback for a GGUF with no known pre-tokenizer: four regexes applied one after another.
const LLAMA_CPP_DEFAULT_REGEXES = [
  '[\\p{P}\\$\\+<=>\\^~\\|]+',
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
  '\\p{N}+',
  '[0-9][0-9][0-9]',
];

const byteLevel = (useRegex: boolean, addPrefixSpace = false) => ({
  type: 'ByteLevel',
  add_prefix_space: addPrefixSpace,
  trim_offsets: false,
  use_regex: useRegex,
});
const split = (regex: string) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false });

function preTokenizer(preset: ByteLevelPreset, addPrefixSpace: boolean): object {
  switch (preset) {
    case 'gpt2':
      return byteLevel(true, addPrefixSpace);
    case 'qwen2':
      return { type: 'Sequence', pretokenizers: [split(QWEN2_REGEX), byteLevel(false)] };
    case 'llama3':
      return { type: 'Sequence', pretokenizers: [split(LLAMA3_REGEX), byteLevel(false)] };
    case 'smollm':
      return { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(true)] };
    case 'default':
      return { type: 'Sequence', pretokenizers: [...LLAMA_CPP_DEFAULT_REGEXES.map(split), byteLevel(false)] };
  }
}

export interface ByteLevelBpeSpec {
  /** Token (in byte-level alphabet: space is "Ġ") → id. */
  vocab: Record<string, number>;
  /** Merge rules in priority order, each "left right" or [left, right]. */
  merges: (string | [string, string])[];
  preset: ByteLevelPreset;
  addedTokens: AddedTokenJson[];
  /** GPT2Tokenizer's add_prefix_space (gpt2 preset only). */
  addPrefixSpace?: boolean;
  /** Take a pre-token that is already a vocabulary token whole, without merging (Llama 3). */
  ignoreMerges?: boolean;
}

/** The tokenizer.json object a Hugging Face fast tokenizer would have for this vocabulary. */
export function byteLevelBpeTokenizerJson(spec: ByteLevelBpeSpec): TokenizerJson {
  const merges = spec.merges.map((m) => (typeof m === 'string' ? splitMerge(m) : m));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: spec.addedTokens,
    // Qwen2's tokenizer normalizes to NFC; the others do not normalize.
    normalizer: spec.preset === 'qwen2' ? { type: 'NFC' } : null,
    pre_tokenizer: preTokenizer(spec.preset, spec.addPrefixSpace ?? false),
    post_processor: byteLevel(false),
    decoder: byteLevel(false),
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: spec.ignoreMerges ?? false,
      vocab: spec.vocab,
      merges,
    },
  };
}

/** "left right" → [left, right]. Byte-level tokens never hold a space, so the first space separates them. */
function splitMerge(line: string): [string, string] {
  const at = line.indexOf(' ', 1);
  if (at < 0) throw new Error(`malformed BPE merge ${JSON.stringify(line)}`);
  return [line.slice(0, at), line.slice(at + 1)];
}

/** The merge rules of a merges.txt file, skipping its optional "#version" header and blank lines. */
export function readMergesTxt(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of text.split('\n')) {
    const l = line.replace(/\r$/, '');
    if (l === '' || l.startsWith('#version')) continue;
    out.push(splitMerge(l));
  }
  return out;
}
