// bare_json: a call is a bare JSON object `{"name": …, "arguments"|"parameters": {…}}`,
// or an array of them, anywhere in the output, with no tags. Any other JSON (and
// anything that is not JSON) stays text.

import { JsonCallArrayReader, JsonCallReader } from '../common/json-call.js';
import { StreamingToolParser, type CallReader, type CallSink } from '../common/stream.js';

export class BareJsonParser extends StreamingToolParser {
  protected readonly openers = ['{', '['];

  protected createReader(opener: string, at: number, sink: CallSink): CallReader {
    return opener === '[' ? new JsonCallArrayReader(sink, at) : new JsonCallReader(sink, at);
  }
}
