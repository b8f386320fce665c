// fam1_coder / fam1_xml: Qwen3-Coder's XML calls,
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>\n</function>\n</tool_call>
// Values are typed by the tool's schema; a parameter without a known type stays a string.
// The `<tool_call>` wrapper is optional (fam1_xml names the bare form, and Qwen3-Coder
// sometimes drops it), so one parser serves both names.

import { ParamTyper, type ToolSchema } from './param-values.js';
import { StreamingToolParser, type CallReader, type CallSink } from './stream.js';
import { XmlCallReader, type XmlDialect } from './xml-calls.js';

const FAM1: XmlDialect = {
  blockOpen: '<tool_call>',
  blockClose: '</tool_call>',
  itemOpen: '<function=',
  itemClose: '</function>',
  paramOpen: '<parameter=',
  paramClose: '</parameter>',
};

export class Fam1Parser extends StreamingToolParser {
  protected readonly openers = [FAM1.blockOpen, FAM1.itemOpen];
  private readonly typer: ParamTyper;

  constructor(tools?: readonly ToolSchema[]) {
    super();
    this.typer = new ParamTyper(tools, 'string');
  }

  protected createReader(opener: string, at: number, sink: CallSink): CallReader {
    return new XmlCallReader(FAM1, this.typer, sink, at, opener === FAM1.blockOpen);
  }
}
