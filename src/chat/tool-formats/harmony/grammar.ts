// harmony (GPT-OSS): a call is the message
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}
// ended by `<|call|>`, which is one of the model's end tokens: so a turn holds one call, and the
// grammar is the whole output (`calls`), whatever the maximum. The analysis message that usually
// comes first is part of the format, so the grammar has it too (free text up to `<|end|>`, then
// `<|start|>assistant`): output-plan.ts adds no reasoning prefix of its own for framed formats.
// Names are the ones the parser reads back (a recipient ends at whitespace or `<`).

import { check, END, lit, literalSwitch, parametersNode, seq, textUntil, type GrammarIR } from '../../../engine/grammar/ir.js';
import type { ToolCallGrammar, ToolDef } from '../format.js';
import { CHANNEL, CONSTRAIN, END as END_TAG, FUNCTIONS, MESSAGE, START } from './messages.js';

const CALL_OPEN = `${CHANNEL}commentary to=${FUNCTIONS}`;
const ANALYSIS_OPEN = `${CHANNEL}analysis${MESSAGE}`;
const NAME = /^[\w.:/-]+$/;

export const harmonyGrammar: ToolCallGrammar = {
  opener: CHANNEL,
  calls(tools: readonly ToolDef[]): GrammarIR {
    for (const t of tools) check(NAME.test(t.name), `tool name ${JSON.stringify(t.name)} is not a harmony recipient`);
    // ` <|constrain|>` ends every name literal, so none prefixes another.
    const call = seq([
      literalSwitch(
        tools.map((t) => `${t.name} ${CONSTRAIN}json${MESSAGE}`),
        tools.map((t) => parametersNode(t.parameters)),
      ),
      END,
    ]);
    return literalSwitch([ANALYSIS_OPEN, CALL_OPEN], [seq([textUntil(END_TAG), lit(`${START}assistant${CALL_OPEN}`), call]), call]);
  },
};
