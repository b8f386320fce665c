// --dump DIR: the process's dump file, DIR/svc-dump-<start time>-<pid>.jsonl, one JSON line per
// finished exchange (src/ops/dump.ts makes the records). Opened once by serve at start-up — process
// level, so a model swap never reopens or resets it. The lines hold prompts and outputs: the file
// is created mode 0600, and DIR, when missing, 0700. Lines are appended in order off the request
// path; a failed write is logged once, as a warning, and never fails a request.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

export class DumpFile {
  private tail: Promise<void> = Promise.resolve();
  private warned = false;

  private constructor(
    /** The file's path, for the start-up log. */
    readonly path: string,
    private readonly handle: FileHandle,
    private readonly warn: (message: string) => void,
  ) {}

  /** Makes DIR if missing and creates the file; rejects with the fs error (a start-up error). */
  static async open(dir: string, warn: (message: string) => void): Promise<DumpFile> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // The start time with colons replaced, so the name is valid on every file system.
    const stamp = new Date().toISOString().replace(/:/g, '-');
    const path = join(dir, `svc-dump-${stamp}-${process.pid}.jsonl`);
    return new DumpFile(path, await open(path, 'a', 0o600), warn);
  }

  /** Appends the record as one line, after the lines written before it. */
  write(record: object): void {
    this.tail = this.tail
      .then(() => this.handle.appendFile(`${JSON.stringify(record)}\n`))
      .catch((err: unknown) => {
        if (this.warned) return;
        this.warned = true;
        const why = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
        this.warn(`--dump: cannot write to ${this.path} (${why}); requests are served, their records may be missing`);
      });
  }

  /** Waits for the pending lines and closes the file. */
  async close(): Promise<void> {
    await this.tail;
    await this.handle.close();
  }
}
