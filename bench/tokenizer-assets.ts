// The real Qwen2.5 tokenizer (vocab.json + merges.txt + tokenizer_config.json) as the benchmark
// checkpoints carry it: GGUF tokenizer.ggml.* metadata written the way llama.cpp's
// convert_hf_to_gguf.py writes a Qwen2 vocabulary, and the files an HF directory copies.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { meta, type GgufMeta } from './gguf-stream-writer.js';

/** Files of the tokenizer directory an HF checkpoint directory gets a copy of. */
export const TOKENIZER_FILES = ['vocab.json', 'merges.txt', 'tokenizer_config.json'] as const;

/** Default: ../shared/models/qwen2.5-0.5b-instruct-tokenizer beside the repository (dist/bench/ → repo root). */
export function defaultTokenizerDir(): string {
  if (process.env.SVC_BENCH_TOKENIZER) return resolve(process.env.SVC_BENCH_TOKENIZER);
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  return resolve(repoRoot, '..', 'shared', 'models', 'qwen2.5-0.5b-instruct-tokenizer');
}

// llama.cpp's token types (gguf.TokenType).
const NORMAL = 1,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5;

export interface BenchTokenizer {
  dir: string;
  /** sha256 over the tokenizer files: part of the checkpoint cache key. */
  hash: string;
  bosId: number;
  eosId: number;
  padId: number;
  /** GGUF tokenizer.* entries for a vocabulary padded to `vocabSize` rows. */
  ggufMetadata(vocabSize: number): Record<string, GgufMeta>;
}

interface AddedToken {
  content: string;
  special?: boolean;
}

export function loadBenchTokenizer(dir = defaultTokenizerDir()): BenchTokenizer {
  const raw = TOKENIZER_FILES.map((f) => readFileSync(join(dir, f)));
  const hash = createHash('sha256');
  for (const b of raw) hash.update(b);
  const [vocabBytes, mergesBytes, configBytes] = raw;
  const vocab = JSON.parse(vocabBytes.toString('utf8')) as Record<string, number>;
  const config = JSON.parse(configBytes.toString('utf8')) as {
    added_tokens_decoder?: Record<string, AddedToken>;
    chat_template?: string;
    eos_token?: string;
    pad_token?: string;
  };
  const merges = mergesBytes
    .toString('utf8')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l !== '' && !l.startsWith('#version'));
  const added = new Map(Object.entries(config.added_tokens_decoder ?? {}).map(([id, t]) => [Number(id), t]));
  const idOf = (content: string | undefined): number | undefined => {
    if (content === undefined) return undefined;
    for (const [id, t] of added) if (t.content === content) return id;
    return vocab[content];
  };
  const endOfText = idOf('<|endoftext|>');
  if (endOfText === undefined) throw new Error(`${dir}: no <|endoftext|> token`);
  const eosId = idOf(config.eos_token) ?? endOfText;
  const padId = idOf(config.pad_token) ?? endOfText;

  const ggufMetadata = (vocabSize: number): Record<string, GgufMeta> => {
    const tokens: string[] = new Array(vocabSize);
    const types = new Int32Array(vocabSize);
    const byId = new Map<number, string>();
    for (const [token, id] of Object.entries(vocab)) byId.set(id, token);
    for (let id = 0; id < vocabSize; id++) {
      const a = added.get(id);
      if (a) {
        tokens[id] = a.content;
        // convert_hf_to_gguf: special tokens, and ones that look special (<|…|>), are CONTROL.
        types[id] = a.special || /^<\|.*\|>$/.test(a.content) ? CONTROL : USER_DEFINED;
      } else if (byId.has(id)) {
        tokens[id] = byId.get(id)!;
        types[id] = NORMAL;
      } else {
        // Embedding rows past the tokenizer are named [PADn] and never produced by tokenization.
        tokens[id] = `[PAD${id}]`;
        types[id] = UNUSED;
      }
    }
    const out: Record<string, GgufMeta> = {
      'tokenizer.ggml.model': meta.str('gpt2'),
      'tokenizer.ggml.pre': meta.str('qwen2'),
      'tokenizer.ggml.tokens': meta.strings(tokens),
      'tokenizer.ggml.token_type': meta.i32s(types),
      'tokenizer.ggml.merges': meta.strings(merges),
      // As in Qwen2.5's published GGUFs: <|endoftext|> doubles as BOS and padding; BOS is not prepended.
      'tokenizer.ggml.bos_token_id': meta.u32(endOfText),
      'tokenizer.ggml.eos_token_id': meta.u32(eosId),
      'tokenizer.ggml.padding_token_id': meta.u32(padId),
      'tokenizer.ggml.add_bos_token': meta.bool(false),
    };
    if (config.chat_template) out['tokenizer.chat_template'] = meta.str(config.chat_template);
    return out;
  };

  return { dir, hash: hash.digest('hex'), bosId: endOfText, eosId, padId, ggufMetadata };
}
