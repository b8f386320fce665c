// Sequential writes to a file through an 8 MiB buffer: generating a checkpoint pushes millions of
// row-sized pieces, and one syscall per row would dominate.
import { closeSync, openSync, writeSync } from 'node:fs';

export class BufferedFile {
  private readonly fd: number;
  private readonly buf = Buffer.alloc(8 << 20);
  private bufLen = 0;
  /** Bytes written so far (buffered or not). */
  position = 0;

  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }

  write(bytes: Uint8Array): void {
    this.position += bytes.byteLength;
    if (this.bufLen + bytes.byteLength > this.buf.length) this.flush();
    if (bytes.byteLength > this.buf.length) {
      writeFully(this.fd, bytes);
      return;
    }
    this.buf.set(bytes, this.bufLen);
    this.bufLen += bytes.byteLength;
  }

  /** Flushes and closes (also after an error, so the descriptor never leaks). */
  close(flush = true): void {
    try {
      if (flush) this.flush();
    } finally {
      closeSync(this.fd);
    }
  }

  private flush(): void {
    writeFully(this.fd, this.buf.subarray(0, this.bufLen));
    this.bufLen = 0;
  }
}

function writeFully(fd: number, data: Uint8Array): void {
  let done = 0;
  while (done < data.byteLength) done += writeSync(fd, data, done, data.byteLength - done);
}
