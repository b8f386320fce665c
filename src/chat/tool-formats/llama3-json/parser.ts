// llama3_json: Llama 3.x JSON calls `{"name": …, "parameters": {…}}`, optionally after
// `<|python_tag|>`, several separated by `;`.

import { JsonCallReader } from '../common/json-call.js';
import { StreamingToolParser, type CallReader, type CallSink } from '../common/stream.js';

const PYTHON_TAG = '<|python_tag|>';

export class Llama3JsonParser extends StreamingToolParser {
  protected readonly openers = [PYTHON_TAG, '{'];
  protected override readonly separators = ';';

  protected createReader(opener: string, at: number, sink: CallSink): CallReader {
    return new JsonCallReader(sink, opener === PYTHON_TAG ? at + PYTHON_TAG.length : at);
  }
}
