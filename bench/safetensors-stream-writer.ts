// Streaming safetensors writer: the JSON header is built from names, dtypes and shapes, then each
// tensor's bytes are pushed in order, so a multi-GB file never sits in memory.
import { BufferedFile } from './buffered-file.js';

export interface SafetensorsDescriptor {
  name: string;
  dtype: 'BF16' | 'F32';
  shape: number[];
}

const ELEMENT_BYTES = { BF16: 2, F32: 4 } as const;

export class SafetensorsStreamWriter {
  private readonly file: BufferedFile;
  private readonly sizes: number[];
  private tensor = 0;
  private writtenInTensor = 0;

  constructor(
    path: string,
    private readonly tensors: SafetensorsDescriptor[],
  ) {
    this.sizes = tensors.map((t) => t.shape.reduce((a, b) => a * b, 1) * ELEMENT_BYTES[t.dtype]);
    const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
    let offset = 0;
    tensors.forEach((t, i) => {
      header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + this.sizes[i]] };
      offset += this.sizes[i];
    });
    // Padding the header with spaces to a multiple of 8 keeps every tensor 8-byte aligned in the file.
    let json = JSON.stringify(header);
    json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
    const jsonBytes = Buffer.from(json, 'utf8');
    const lead = Buffer.alloc(8);
    lead.writeBigUInt64LE(BigInt(jsonBytes.length));
    this.file = new BufferedFile(path);
    this.file.write(lead);
    this.file.write(jsonBytes);
  }

  /** Appends bytes of the current tensor. */
  write(bytes: Uint8Array): void {
    if (this.tensor >= this.tensors.length) throw new Error('safetensors writer: more data than tensors');
    if (this.writtenInTensor + bytes.byteLength > this.sizes[this.tensor]) {
      throw new Error(`safetensors writer: ${this.tensors[this.tensor].name} overflows its ${this.sizes[this.tensor]} bytes`);
    }
    this.file.write(bytes);
    this.writtenInTensor += bytes.byteLength;
    if (this.writtenInTensor === this.sizes[this.tensor]) {
      this.tensor++;
      this.writtenInTensor = 0;
    }
  }

  /** Flushes and closes; throws if a tensor is incomplete. Returns the file size. */
  close(): number {
    const complete = this.tensor === this.tensors.length;
    this.file.close(complete);
    if (!complete) throw new Error(`safetensors writer: closed after ${this.tensor} of ${this.tensors.length} tensors`);
    return this.file.position;
  }

  /** Closes after a failure, without the completeness check (the caller deletes the file). */
  abort(): void {
    this.file.close(false);
  }
}
