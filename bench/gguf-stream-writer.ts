// Streaming GGUF v3 writer: the header (encoded by src/model/loaders/gguf-writer.ts from tensor
// descriptors alone) is written first, then each tensor's bytes are pushed in order, so a
// multi-GB checkpoint never sits in memory.
import {
  encodeGgufHeader,
  ggufTensorByteSize,
  typed,
  typedArray,
  type GgufMetadataValue,
  type GgufTensorInfo,
  type GgufTypedValue,
} from '../src/model/loaders/gguf-writer.js';
import { BufferedFile } from './buffered-file.js';

/** A metadata value with its GGUF type spelled out (the format cares: u32 vs f32 vs i32). */
export type GgufMeta = GgufTypedValue;

export const meta = {
  str: (value: string): GgufMeta => typed('string', value),
  u32: (value: number): GgufMeta => typed('u32', value),
  i32: (value: number): GgufMeta => typed('i32', value),
  f32: (value: number): GgufMeta => typed('f32', value),
  bool: (value: boolean): GgufMeta => typed('bool', value),
  strings: (value: readonly string[]): GgufMeta => typedArray('string', value),
  i32s: (value: ArrayLike<number>): GgufMeta => typedArray('i32', value),
};

export type GgufTensorDescriptor = GgufTensorInfo;
export const ggufTensorBytes = ggufTensorByteSize;

/**
 * Writes a GGUF file: construct (writes the header), then for each descriptor in order call
 * write() with its bytes in as many pieces as convenient, then close().
 */
export class GgufStreamWriter {
  private readonly file: BufferedFile;
  private readonly sizes: number[];
  private readonly alignment: number;
  private tensor = 0;
  private writtenInTensor = 0;

  constructor(
    path: string,
    metadata: Record<string, GgufMetadataValue>,
    private readonly tensors: GgufTensorDescriptor[],
  ) {
    this.sizes = tensors.map(ggufTensorByteSize);
    const header = encodeGgufHeader(metadata, tensors);
    this.alignment = header.alignment;
    this.file = new BufferedFile(path);
    this.file.write(header.bytes);
    this.pad();
  }

  /** Appends bytes of the current tensor. */
  write(bytes: Uint8Array): void {
    if (this.tensor >= this.tensors.length) throw new Error('GGUF writer: more data than tensors');
    const left = this.sizes[this.tensor] - this.writtenInTensor;
    if (bytes.byteLength > left)
      throw new Error(`GGUF writer: ${this.tensors[this.tensor].name} overflows its ${this.sizes[this.tensor]} bytes`);
    this.file.write(bytes);
    this.writtenInTensor += bytes.byteLength;
    if (this.writtenInTensor === this.sizes[this.tensor]) {
      this.tensor++;
      this.writtenInTensor = 0;
      this.pad();
    }
  }

  /** Flushes and closes; throws if a tensor is incomplete. Returns the file size. */
  close(): number {
    const complete = this.tensor === this.tensors.length;
    this.file.close(complete);
    if (!complete) throw new Error(`GGUF writer: closed after ${this.tensor} of ${this.tensors.length} tensors`);
    return this.file.position;
  }

  /** Closes after a failure, without the completeness check (the caller deletes the file). */
  abort(): void {
    this.file.close(false);
  }

  private pad(): void {
    const to = Math.ceil(this.file.position / this.alignment) * this.alignment;
    if (to > this.file.position) this.file.write(new Uint8Array(to - this.file.position));
  }
}
