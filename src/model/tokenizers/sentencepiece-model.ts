// Reader for SentencePiece tokenizer.model files (a ModelProto protobuf): the pieces, their scores and types,
// and the few settings tokenization needs. Only BPE models are accepted; unigram models need Viterbi decoding.
import { PIECE_TYPE, type SentencePieceVocab } from './sentencepiece-bpe.js';

export interface SentencePieceModel extends SentencePieceVocab {
  types: number[];
  scores: number[];
  bosId: number | null;
  eosId: number | null;
}

export class SentencePieceModelError extends Error {}

/** Minimal protobuf wire-format walker: calls `onField` for each field of a message. */
/** Varints arrive as bigint (a negative int32 is sign-extended to 64 bits), floats as number, the rest as bytes. */
function walkMessage(buf: Uint8Array, onField: (field: number, value: bigint | number | Uint8Array) => void): void {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new SentencePieceModelError('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = Math.floor(key / 8);
    const wireType = key & 7;
    if (wireType === 0) onField(field, varint());
    else if (wireType === 1) {
      onField(field, view.getFloat64(pos, true));
      pos += 8;
    } else if (wireType === 5) {
      onField(field, view.getFloat32(pos, true));
      pos += 4;
    } else if (wireType === 2) {
      const len = Number(varint());
      if (pos + len > buf.length) throw new SentencePieceModelError('truncated field');
      onField(field, buf.subarray(pos, pos + len));
      pos += len;
    } else throw new SentencePieceModelError(`unsupported protobuf wire type ${wireType}`);
  }
}

const int32 = (v: bigint) => Number(BigInt.asIntN(32, v));

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Parse a tokenizer.model file. */
export function readSentencePieceModel(bytes: Uint8Array): SentencePieceModel {
  const pieces: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  let modelType = 1; // TrainerSpec.model_type: 1 unigram (the default), 2 BPE, 3 word, 4 char
  let addSpacePrefix = true; // NormalizerSpec.add_dummy_prefix
  let unkId: number | null = 0;
  let bosId: number | null = 1;
  let eosId: number | null = 2;

  walkMessage(bytes, (field, value) => {
    if (field === 1 && value instanceof Uint8Array) {
      let piece = '';
      let score = 0;
      let type: number = PIECE_TYPE.NORMAL;
      walkMessage(value, (f, v) => {
        if (f === 1 && v instanceof Uint8Array) piece = decoder.decode(v);
        else if (f === 2 && typeof v === 'number') score = v;
        else if (f === 3 && typeof v === 'bigint') type = int32(v);
      });
      pieces.push(piece);
      scores.push(score);
      types.push(type);
    } else if (field === 2 && value instanceof Uint8Array) {
      walkMessage(value, (f, v) => {
        if (typeof v !== 'bigint') return;
        const id = int32(v);
        if (f === 3) modelType = id;
        else if (f === 40) unkId = id < 0 ? null : id;
        else if (f === 41) bosId = id < 0 ? null : id;
        else if (f === 42) eosId = id < 0 ? null : id;
      });
    } else if (field === 3 && value instanceof Uint8Array) {
      walkMessage(value, (f, v) => {
        if (f === 3 && typeof v === 'bigint') addSpacePrefix = v !== 0n;
      });
    }
  });

  if (modelType !== 2) throw new SentencePieceModelError(`SentencePiece model type ${modelType} is not supported (only BPE, type 2)`);
  if (pieces.length === 0) throw new SentencePieceModelError('SentencePiece model has no pieces');
  return { pieces, scores, types, addSpacePrefix, unkId, bosId, eosId };
}
