// One call whose arguments object is built a parameter at a time, for formats whose
// parameters complete one by one (XML families, glm4): each finished parameter is
// streamed as soon as it is known, and the fragments join into one JSON object.

import type { CallSink } from './stream.js';

export class ArgsWriter {
  private count = 0;

  /** Opens the call. */
  constructor(
    private readonly sink: CallSink,
    name: string,
  ) {
    sink.open(name);
  }

  param(key: string, value: unknown): void {
    const sep = this.count++ === 0 ? '{' : ', ';
    this.sink.args(`${sep}${JSON.stringify(key)}: ${JSON.stringify(value ?? null)}`);
  }

  /** Closes the arguments object and the call. */
  close(): void {
    this.sink.args(this.count === 0 ? '{}' : '}');
    this.sink.close();
  }
}
