// Tokenizer over a Hugging Face tokenizer.json object, run by @huggingface/tokenizers.
import { Tokenizer as HfTokenizerCore } from '@huggingface/tokenizers';
import type { Tokenizer, EncodeOptions, DecodeOptions, TokenizerDefinition } from '../tokenizer.js';
import { packTokenizerDefinition } from './packed-definition.js';
import { maxInputCharsPerToken, wordCapCuts } from './input-bounds.js';
import { tokenBytesContext, tokenRawBytes, type TokenBytesContext } from './token-bytes.js';

const utf8 = new TextEncoder();

/** What tokenizer.json does not say: special tokens and BOS/EOS policy (from tokenizer_config.json or GGUF metadata). */
export interface SpecialTokenSettings {
  bosToken?: string | null;
  eosToken?: string | null;
  /** Undefined: whatever tokenizer.json's post-processor adds to an encoded text. */
  addBosToken?: boolean;
  addEosToken?: boolean;
  /** HF's clean_up_tokenization_spaces (" ." → "."); off unless the model asks for it. */
  cleanUpTokenizationSpaces?: boolean;
  /** Tokens that count as special though tokenizer.json does not flag them (config bos/eos/unk/pad, additional_special_tokens). */
  extraSpecialTokens?: string[];
}

export class HfTokenizer implements Tokenizer {
  private readonly core: HfTokenizerCore;
  readonly vocabSize: number;
  readonly specialTokenIds: ReadonlySet<number>;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly addBosToken: boolean;
  private readonly addEosToken: boolean;
  private readonly bosId: number | undefined;
  private readonly eosId: number | undefined;
  private readonly cleanUp: boolean;
  /** Built without packed bytes: the inputs (the core keeps the tokenizer.json object then, so this costs no memory). */
  private readonly definition: TokenizerDefinition | null;
  private packedBytes: SharedArrayBuffer | null;
  readonly maxInputCharsPerToken: number;
  /** Added tokens' texts: a word-cap cut never falls inside one written in the text. */
  private readonly addedTexts: string[];
  /** tokenBytes' reference token (worked out on first use) and the bytes it gave, per id. */
  private bytesContext: TokenBytesContext | null = null;
  private readonly bytesCache = new Map<number, Uint8Array>();

  /** With `packed` (the same definition, packed), the core lets go of what it only read while building. */
  constructor(tokenizerJson: object, settings: SpecialTokenSettings, packed?: SharedArrayBuffer) {
    this.core = new HfTokenizerCore(tokenizerJson, {});
    this.packedBytes = packed ?? null;
    this.definition = packed ? null : { tokenizerJson, settings };
    this.bosToken = settings.bosToken ?? null;
    this.eosToken = settings.eosToken ?? null;
    this.bosId = this.bosToken !== null ? this.core.token_to_id(this.bosToken) : undefined;
    this.eosId = this.eosToken !== null ? this.core.token_to_id(this.eosToken) : undefined;
    this.cleanUp = settings.cleanUpTokenizationSpaces ?? false;

    // Without an explicit policy, ask the post-processor what it wraps around a text (TinyStories adds BOS).
    const wrapped = this.core.encode('', { add_special_tokens: true }).ids;
    const wrapsBos = this.bosId !== undefined && wrapped[0] === this.bosId;
    const afterBos = wrapped.slice(wrapsBos ? 1 : 0);
    this.addBosToken = settings.addBosToken ?? wrapsBos;
    this.addEosToken = settings.addEosToken ?? (this.eosId !== undefined && afterBos[afterBos.length - 1] === this.eosId);

    const special = new Set<number>();
    for (const [id, token] of this.core.get_added_tokens_decoder()) if (token.special) special.add(id);
    for (const t of settings.extraSpecialTokens ?? []) {
      const id = this.core.token_to_id(t);
      if (id !== undefined) special.add(id);
    }
    this.specialTokenIds = special;
    this.addedTexts = [...this.core.get_added_tokens_decoder().values()].map((t) => t.content);
    this.maxInputCharsPerToken = maxInputCharsPerToken(tokenizerJson);

    let maxId = -1;
    for (const id of this.core.get_vocab(true).values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;
    if (packed) releaseBuildInputs(this.core);
  }

  get packed(): SharedArrayBuffer {
    this.packedBytes ??= packTokenizerDefinition(this.definition!);
    return this.packedBytes;
  }

  encode(text: string, opts: EncodeOptions = {}): number[] {
    // Special tokens are placed here rather than by the post-processor so BOS/EOS follow addBosToken/addEosToken.
    const ids = this.encodeCapped(text, opts.limit ?? Infinity);
    if (!opts.addSpecialTokens) return ids;
    if (this.addBosToken && this.bosId !== undefined) ids.unshift(this.bosId);
    if (this.addEosToken && this.eosId !== undefined) ids.push(this.eosId);
    return ids;
  }

  /** The text's ids, a whitespace-free run longer than MAX_WORD_CHARS in pieces; stops between pieces once past `limit`. */
  private encodeCapped(text: string, limit: number): number[] {
    const cuts = wordCapCuts(text, this.addedTexts);
    if (cuts.length === 0) return this.core.encode(text, { add_special_tokens: false }).ids;
    const ids: number[] = [];
    let from = 0;
    for (const to of [...cuts, text.length]) {
      for (const id of this.core.encode(text.slice(from, to), { add_special_tokens: false }).ids) ids.push(id);
      if (ids.length > limit) break;
      from = to;
    }
    return ids;
  }

  decode(ids: number[], opts: DecodeOptions = {}): string {
    // Ids past the vocabulary (padding rows of the embedding table) have no text.
    const kept = ids.filter((id) => this.core.id_to_token(id) !== undefined && !(opts.skipSpecialTokens && this.specialTokenIds.has(id)));
    if (kept.length === 0) return '';
    return this.core.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: this.cleanUp });
  }

  tokenBytes(id: number): Uint8Array {
    let bytes = this.bytesCache.get(id);
    if (bytes === undefined) {
      this.bytesContext ??= tokenBytesContext(this);
      // Bytes that cannot be recovered from the spelling: the text's, U+FFFD and all.
      bytes = tokenRawBytes(this, id, this.bytesContext) ?? utf8.encode(this.decode([id]));
      this.bytesCache.set(id, bytes);
    }
    return bytes;
  }

  tokenToId(token: string): number | undefined {
    return this.core.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.core.id_to_token(id);
  }
}

/**
 * Drops the core's references to what it read only while building (@huggingface/tokenizers 0.2):
 * the tokenizer.json object, and a BPE model's merge list and config (its vocab object and merges),
 * whose contents live on in its tokens_to_ids / vocab / bpe_ranks tables. encode and decode never
 * read them again. ~24 MB of a 151k byte-level BPE's 59 MB. A field this version does not have is
 * left alone.
 */
function releaseBuildInputs(core: HfTokenizerCore): void {
  const fields = core as unknown as { tokenizer?: unknown; model?: { merges?: unknown; bpe_ranks?: unknown; config?: object } };
  if ('tokenizer' in fields) fields.tokenizer = null;
  const model = fields.model;
  if (model && model.bpe_ranks instanceof Map && Array.isArray(model.merges)) {
    model.merges = null;
    if (model.config) {
      const { vocab: _vocab, merges: _merges, ...rest } = model.config as Record<string, unknown>;
      model.config = rest;
    }
  }
}
