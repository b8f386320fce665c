// The Tokenizer the server and engine use, and loaders that build one from a model directory or a .gguf file.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HfTokenizer, type SpecialTokenSettings } from './tokenizers/hf-tokenizer.js';
import { byteLevelBpeTokenizerJson, readMergesTxt, type AddedTokenJson, type TokenizerJson } from './tokenizers/byte-level-bpe.js';
import { sentencePieceBpeTokenizerJson } from './tokenizers/sentencepiece-bpe.js';
import { readSentencePieceModel } from './tokenizers/sentencepiece-model.js';
import { loadGgufTokenizerDefinition } from './gguf-tokenizer.js';
import { packTokenizerDefinition, unpackTokenizerDefinition } from './tokenizers/packed-definition.js';

export { packTokenizerDefinition, unpackTokenizerDefinition };

export interface EncodeOptions {
  /**
   * Add the model's BOS (and EOS, for the rare model that wants it) around the text, as the model's own
   * tokenizer would for a raw prompt. Default false: text rendered by a chat template already carries them.
   */
  addSpecialTokens?: boolean;
  /**
   * The caller only needs to know whether the text has more ids than this: encoding may stop early
   * (between the pieces of a very long word) once past it, returning more than `limit` ids but not all.
   */
  limit?: number;
}

export interface DecodeOptions {
  /** Drop special tokens (BOS/EOS/`<|im_end|>` …) from the text. Default false. */
  skipSpecialTokens?: boolean;
}

export interface Tokenizer {
  /** Token ids of `text`. Special and added tokens written in the text (`<|im_start|>`, `<think>`) become their single ids. */
  encode(text: string, opts?: EncodeOptions): number[];
  /** Text of `ids`. Ids with no token are skipped; a cut UTF-8 sequence comes out as U+FFFD. */
  decode(ids: number[], opts?: DecodeOptions): string;
  /**
   * The bytes token `id` adds to the text (its byte-level BPE / SentencePiece bytes, leading space
   * included): part of a character for a token that splits one, so the bytes of a sequence's tokens
   * concatenate to its UTF-8 text. Special tokens give their text; an id with no token, no bytes.
   */
  tokenBytes(id: number): Uint8Array;
  tokenToId(token: string): number | undefined;
  idToToken(id: number): string | undefined;
  /** One more than the highest token id (the embedding table may be larger). */
  readonly vocabSize: number;
  /** Ids that decode drops with skipSpecialTokens (control tokens; not `<think>`-style added tokens). */
  readonly specialTokenIds: ReadonlySet<number>;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  /** Whether a prompt should start with BOS (what encode adds with addSpecialTokens). */
  readonly addBosToken: boolean;
  /**
   * The most UTF-16 units of input one token can stand for (Infinity when no such bound holds): a text
   * longer than maxSeqLen × this can never fit the context (src/model/tokenizers/input-bounds.ts).
   */
  readonly maxInputCharsPerToken: number;
  /**
   * What it was built from (its TokenizerDefinition), v8-serialized in shared memory: another thread
   * rebuilds the same tokenizer with tokenizerFromPacked, reading these bytes where they are.
   */
  readonly packed: SharedArrayBuffer;
}

/**
 * A tokenizer as plain, structured-clone-friendly data (a tokenizer.json object and the special-token
 * settings beside it), whatever it was read from (tokenizer.json, vocab.json + merges.txt, tokenizer.model,
 * GGUF metadata). Lets a worker thread use the main thread's tokenizer without reading any file.
 */
export interface TokenizerDefinition {
  tokenizerJson: object;
  settings: SpecialTokenSettings;
}

/**
 * The tokenizer a definition describes: the same one it was taken from. Given `packed` (the same
 * definition's packTokenizerDefinition bytes), it keeps those as its `packed` and lets go of the
 * definition's tables, which it only needs while building: once the caller drops the definition too,
 * ~20 MB less heap for a 151k vocabulary (the serve path builds every tokenizer so).
 */
export function tokenizerFromDefinition(definition: TokenizerDefinition, packed?: SharedArrayBuffer): Tokenizer {
  return new HfTokenizer(definition.tokenizerJson, definition.settings, packed);
}

/** The tokenizer of packed definition bytes (Tokenizer.packed, packTokenizerDefinition), built on this thread. */
export function tokenizerFromPacked(packed: SharedArrayBuffer): Tokenizer {
  return tokenizerFromDefinition(unpackTokenizerDefinition(packed), packed);
}

export class TokenizerLoadError extends Error {}

type Json = Record<string, unknown>;

function readJson(path: string): Json {
  return JSON.parse(readFileSync(path, 'utf8')) as Json;
}

function readJsonIfExists(path: string): Json | null {
  return existsSync(path) ? readJson(path) : null;
}

/** A token as tokenizer_config.json writes it: a string, or an AddedToken object with `content`. */
function tokenContent(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as Json).content === 'string') return (value as Json).content as string;
  return null;
}

/** tokenizer_config.json's added_tokens_decoder as tokenizer.json added_tokens entries, by id. */
function addedTokensFromConfig(config: Json): AddedTokenJson[] {
  const decoder = (config.added_tokens_decoder ?? {}) as Record<string, Json>;
  return Object.entries(decoder)
    .map(([id, t]) => ({
      id: Number(id),
      content: String(t.content),
      single_word: Boolean(t.single_word ?? false),
      lstrip: Boolean(t.lstrip ?? false),
      rstrip: Boolean(t.rstrip ?? false),
      normalized: Boolean(t.normalized ?? false),
      special: Boolean(t.special ?? false),
    }))
    .sort((a, b) => a.id - b.id);
}

/** The files beside tokenizer.json that say which tokens are special and whether BOS is added. */
interface TokenizerSideFiles {
  config: Json | null; // tokenizer_config.json
  specialTokensMap?: Json | null; // special_tokens_map.json
  modelConfigs?: Json[]; // generation_config.json, config.json
}

function readSideFiles(dir: string): TokenizerSideFiles {
  return {
    config: readJsonIfExists(join(dir, 'tokenizer_config.json')),
    specialTokensMap: readJsonIfExists(join(dir, 'special_tokens_map.json')),
    modelConfigs: ['generation_config.json', 'config.json'].map((f) => readJsonIfExists(join(dir, f))).filter((c): c is Json => c !== null),
  };
}

/**
 * Special-token settings: tokenizer_config.json first, then special_tokens_map.json, then the ids in
 * generation_config.json / config.json (SmolLM2's directory has no tokenizer_config.json).
 */
function specialTokenSettings(files: TokenizerSideFiles, idToToken: (id: number) => string | undefined): SpecialTokenSettings {
  const config = files.config;
  const map = files.specialTokensMap ?? {};
  const pick = (key: string) => tokenContent(config?.[key]) ?? tokenContent(map[key]);
  // A token named by neither file (as opposed to set to null, as Qwen does for BOS) falls back to the model config's id.
  const unnamed = (key: string) => config?.[key] === undefined && map[key] === undefined;
  const fromModelConfig = (idKey: string): string | null => {
    for (const c of files.modelConfigs ?? []) {
      const id = Array.isArray(c[idKey]) ? (c[idKey] as unknown[])[0] : c[idKey];
      if (typeof id === 'number') return idToToken(id) ?? null;
    }
    return null;
  };
  const bosToken = pick('bos_token') ?? (unnamed('bos_token') ? fromModelConfig('bos_token_id') : null);
  const eosToken = pick('eos_token') ?? (unnamed('eos_token') ? fromModelConfig('eos_token_id') : null);
  const extraSpecial = [pick('unk_token'), pick('pad_token'), bosToken, eosToken];
  for (const t of (config?.additional_special_tokens ?? map.additional_special_tokens ?? []) as unknown[])
    extraSpecial.push(tokenContent(t));
  return {
    bosToken,
    eosToken,
    addBosToken: typeof config?.add_bos_token === 'boolean' ? config.add_bos_token : undefined,
    addEosToken: typeof config?.add_eos_token === 'boolean' ? config.add_eos_token : undefined,
    cleanUpTokenizationSpaces: config?.clean_up_tokenization_spaces === true,
    extraSpecialTokens: extraSpecial.filter((t): t is string => t !== null),
  };
}

/** The token of an id in a tokenizer.json object (added tokens first, then the model vocabulary). */
function tokenOfId(tokenizerJson: Json, id: number): string | undefined {
  const added = (tokenizerJson.added_tokens ?? []) as { id: number; content: string }[];
  const hit = added.find((t) => t.id === id);
  if (hit) return hit.content;
  const vocab = ((tokenizerJson.model ?? {}) as Json).vocab;
  if (vocab && typeof vocab === 'object' && !Array.isArray(vocab)) {
    for (const [token, tokenId] of Object.entries(vocab as Record<string, number>)) if (tokenId === id) return token;
  }
  return undefined;
}

function definitionFromTokenizerJson(tokenizerJson: Json, files: TokenizerSideFiles): TokenizerDefinition {
  return { tokenizerJson, settings: specialTokenSettings(files, (id) => tokenOfId(tokenizerJson, id)) };
}

/** A tokenizer from a tokenizer.json object and, when there is one, the tokenizer_config.json object beside it. */
export function tokenizerFromHfJson(
  tokenizerJson: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown> | null = null,
): Tokenizer {
  return tokenizerFromDefinition(definitionFromTokenizerJson(tokenizerJson, { config: tokenizerConfig }));
}

/**
 * The tokenizer.json a fast tokenizer would have, for a directory holding only vocab.json + merges.txt +
 * tokenizer_config.json (a slow Qwen2Tokenizer or GPT2Tokenizer).
 */
export function tokenizerJsonFromVocabMerges(dir: string): TokenizerJson {
  const config = readJsonIfExists(join(dir, 'tokenizer_config.json')) ?? {};
  const tokenizerClass = String(config.tokenizer_class ?? 'GPT2Tokenizer').replace(/Fast$/, '');
  let preset: 'qwen2' | 'gpt2';
  if (tokenizerClass === 'Qwen2Tokenizer') preset = 'qwen2';
  else if (tokenizerClass === 'GPT2Tokenizer') preset = 'gpt2';
  else
    throw new TokenizerLoadError(
      `${dir}: cannot build a tokenizer for ${tokenizerClass} from vocab.json/merges.txt (supported: Qwen2Tokenizer, GPT2Tokenizer)`,
    );
  return byteLevelBpeTokenizerJson({
    vocab: readJson(join(dir, 'vocab.json')) as Record<string, number>,
    merges: readMergesTxt(readFileSync(join(dir, 'merges.txt'), 'utf8')),
    preset,
    addedTokens: addedTokensFromConfig(config),
    addPrefixSpace: config.add_prefix_space === true,
  });
}

/** A tokenizer for a vocab.json + merges.txt + tokenizer_config.json directory (see tokenizerJsonFromVocabMerges). */
export function loadTokenizerFromVocabMerges(dir: string): Tokenizer {
  return tokenizerFromDefinition(definitionFromTokenizerJson(tokenizerJsonFromVocabMerges(dir), readSideFiles(dir)));
}

/** The tokenizer of a directory with only a SentencePiece BPE tokenizer.model (+ tokenizer_config.json). */
function sentencePieceModelDirDefinition(dir: string): TokenizerDefinition {
  const model = readSentencePieceModel(readFileSync(join(dir, 'tokenizer.model')));
  const json = sentencePieceBpeTokenizerJson(model);
  const settings = specialTokenSettings(readSideFiles(dir), (id) => model.pieces[id]);
  settings.bosToken ??= model.bosId !== null ? model.pieces[model.bosId] : null;
  settings.eosToken ??= model.eosId !== null ? model.pieces[model.eosId] : null;
  settings.addBosToken ??= true; // what LlamaTokenizer does by default
  return { tokenizerJson: json, settings };
}

/**
 * The tokenizer of a model: a Hugging Face directory (tokenizer.json, else vocab.json + merges.txt, else a
 * SentencePiece tokenizer.model) or a .gguf file (its embedded tokenizer.ggml.* vocabulary).
 */
export function loadTokenizer(path: string): Tokenizer {
  return tokenizerFromDefinition(loadTokenizerDefinition(path));
}

/**
 * What loadTokenizer builds its tokenizer from, as plain data: worker threads can be handed it before
 * the tokenizer itself is built (building it is most of the cost).
 */
export function loadTokenizerDefinition(path: string): TokenizerDefinition {
  if (!existsSync(path)) throw new TokenizerLoadError(`${path}: no such file or directory`);
  if (statSync(path).isFile()) {
    if (path.endsWith('.gguf')) return loadGgufTokenizerDefinition(path);
    throw new TokenizerLoadError(`${path}: expected a model directory or a .gguf file`);
  }
  if (existsSync(join(path, 'tokenizer.json')))
    return definitionFromTokenizerJson(readJson(join(path, 'tokenizer.json')), readSideFiles(path));
  if (existsSync(join(path, 'vocab.json')) && existsSync(join(path, 'merges.txt')))
    return definitionFromTokenizerJson(tokenizerJsonFromVocabMerges(path), readSideFiles(path));
  if (existsSync(join(path, 'tokenizer.model'))) return sentencePieceModelDirDefinition(path);
  throw new TokenizerLoadError(`${path}: no tokenizer.json, vocab.json + merges.txt, or tokenizer.model`);
}
