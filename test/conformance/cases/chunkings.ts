// The ways a conformance case's text is cut into stream chunks: whole, every fixed size
// from 1 to 16 characters, every two-piece split, with every tag-like token broken into
// single characters, and by real token boundaries (the Qwen tokenizer of svc-tiny-chat,
// through the same incremental detokenizer the server uses). A streaming parser must give
// the same result for all of them.
import { IncrementalDetokenizer } from '../../../src/chat/detokenizer.js';
import { loadTokenizer, type Tokenizer } from '../../../src/model/tokenizer.js';
import { TINY_CHAT } from '../../helpers/paths.js';

let tokenizer: Tokenizer | null = null;

/** The text as the server would stream it: one detokenizer step per token. */
function byTokens(text: string): string[] {
  tokenizer ??= loadTokenizer(TINY_CHAT);
  const detok = new IncrementalDetokenizer(tokenizer, false);
  const out: string[] = [];
  for (const id of tokenizer.encode(text)) {
    const piece = detok.push([id]);
    if (piece !== '') out.push(piece);
  }
  const tail = detok.finish();
  if (tail !== '') out.push(tail);
  return out;
}

const TAG = /<[^<>\s]{1,40}>|<\|[^|]*\|>|\[[A-Z_]+\]|```|<[a-z_:]+[= ]/g;

export interface Chunking {
  label: string;
  chunks: string[];
}

export function* chunkings(text: string): Generator<Chunking> {
  yield { label: 'whole', chunks: [text] };
  for (let size = 1; size <= 16; size++) yield { label: `size ${size}`, chunks: bySize(text, size) };
  for (let i = 1; i < text.length; i++) yield { label: `split at ${i}`, chunks: [text.slice(0, i), text.slice(i)] };
  yield { label: 'tags shattered', chunks: shatterTags(text) };
  yield { label: 'real tokens', chunks: byTokens(text) };
}

function bySize(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Text between tags stays whole; each tag arrives one character per chunk. */
function shatterTags(text: string): string[] {
  const out: string[] = [];
  let last = 0;
  for (const m of text.matchAll(TAG)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(...m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
