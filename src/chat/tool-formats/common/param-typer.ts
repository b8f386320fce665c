// Values of the formats that carry each parameter as raw text (the XML families, glm4), typed by
// the tool's schema: "5" is 5 for an integer parameter and "5" for a string one. The conversion
// itself is shared with the grammars (src/engine/grammar/param-values.ts).

import { convertParamText, declaredTypes, type JsonSchema, type UntypedValues } from '../../../engine/grammar/param-values.js';
import type { ToolSchema } from '../format.js';

export class ParamTyper {
  private readonly props = new Map<string, Record<string, JsonSchema>>();

  constructor(
    tools: readonly ToolSchema[] | undefined,
    private readonly untyped: UntypedValues,
  ) {
    for (const t of tools ?? []) this.props.set(t.name, t.parameters?.properties ?? {});
  }

  /** The JSON value of parameter `param` of tool `tool`, given as raw text. */
  convert(tool: string, param: string, raw: string): unknown {
    const schema = this.props.get(tool)?.[param];
    return convertParamText(raw, schema ? declaredTypes(schema) : new Set<string>(), this.untyped);
  }
}
