// The structured-output fields of OpenAI-family requests (chat and legacy completions) → one
// OutputFormat: OpenAI's `response_format` and vLLM's extensions, `structured_outputs` (current)
// and `guided_json` / `guided_regex` / `guided_choice` / `guided_grammar` (older). At most one
// may be given. `guided_grammar` and `structured_outputs.grammar` take GBNF (llama.cpp's).
import type { OutputFormat } from '../../chat/request.js';
import { invalidParam, unsupportedParam } from '../../common/api-error.js';
import { requestSchema } from '../json-limits.js';

export interface WireResponseFormat {
  type: string;
  json_schema?: { name?: string; schema?: Record<string, unknown>; strict?: boolean | null; description?: string } | null;
}

export interface WireStructuredOutputs {
  json?: unknown;
  regex?: string | null;
  choice?: string[] | null;
  grammar?: string | null;
  json_object?: boolean | null;
  [other: string]: unknown;
}

export interface WireStructuredFields {
  response_format?: WireResponseFormat | null;
  structured_outputs?: WireStructuredOutputs | null;
  guided_json?: unknown;
  guided_regex?: string | null;
  guided_choice?: string[] | null;
  guided_grammar?: string | null;
}

// Bounds on what the grammar compiler gets from the request (it runs on the request's thread):
// a regex or GBNF text, and a choice list. Schemas are bounded by SCHEMA_LIMIT.
const regexText = { type: ['string', 'null'], maxLength: 4096 };
const grammarText = { type: ['string', 'null'], maxLength: 32_768 };
const choiceList = { type: ['array', 'null'], maxItems: 1024, items: { type: 'string', maxLength: 1024 } };

/** JSON-schema properties of the fields above, for the routes' body schemas. */
export const structuredOutputProperties = {
  response_format: {
    type: ['object', 'null'],
    required: ['type'],
    properties: {
      type: { type: 'string', enum: ['text', 'json_object', 'json_schema'] },
      json_schema: {
        type: ['object', 'null'],
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          schema: { anyOf: [{ type: 'object' }, { type: 'boolean' }] },
          strict: { type: ['boolean', 'null'] },
        },
      },
    },
  },
  structured_outputs: {
    type: ['object', 'null'],
    properties: {
      json: { anyOf: [{ type: 'object' }, { type: 'string' }, { type: 'boolean' }] },
      regex: regexText,
      choice: choiceList,
      grammar: grammarText,
      json_object: { type: ['boolean', 'null'] },
    },
  },
  guided_json: { anyOf: [{ type: 'object' }, { type: 'string' }, { type: 'boolean' }, { type: 'null' }] },
  guided_regex: regexText,
  guided_choice: choiceList,
  guided_grammar: grammarText,
} as const;

/** The request's OutputFormat, or null when it asks for free text. */
export function decodeOutputFormat(body: WireStructuredFields): OutputFormat | null {
  const given: OutputFormat[] = [];
  const rf = body.response_format;
  if (rf != null && rf.type !== 'text') given.push(fromResponseFormat(rf));
  if (body.structured_outputs != null) {
    const f = fromStructuredOutputs(body.structured_outputs);
    if (f) given.push(f);
  }
  if (body.guided_json != null)
    given.push({ type: 'json_schema', schema: schemaValue(body.guided_json, 'guided_json'), param: 'guided_json' });
  if (body.guided_regex != null) given.push({ type: 'regex', pattern: body.guided_regex, param: 'guided_regex' });
  if (body.guided_choice != null) given.push({ type: 'choice', choices: body.guided_choice, param: 'guided_choice' });
  if (body.guided_grammar != null) given.push({ type: 'grammar', grammar: body.guided_grammar, param: 'guided_grammar' });
  if (given.length > 1) {
    throw invalidParam(
      given[1]!.param,
      `Only one structured-output constraint may be given, but the request has '${given[0]!.param}' and '${given[1]!.param}'.`,
    );
  }
  return given[0] ?? null;
}

function fromResponseFormat(rf: WireResponseFormat): OutputFormat {
  if (rf.type === 'json_object') return { type: 'json_object', param: 'response_format' };
  const js = rf.json_schema;
  if (js == null) throw invalidParam('response_format.json_schema', "Missing required parameter: 'response_format.json_schema'.");
  if (js.schema === undefined) {
    throw invalidParam('response_format.json_schema.schema', "Missing required parameter: 'response_format.json_schema.schema'.");
  }
  const param = 'response_format.json_schema.schema';
  return {
    type: 'json_schema',
    schema: schemaValue(js.schema, param),
    ...(js.name !== undefined ? { name: js.name } : {}),
    ...(js.strict != null ? { strict: js.strict } : {}),
    param,
  };
}

const STRUCTURED_KEYS = ['json', 'regex', 'choice', 'grammar', 'json_object'];

function fromStructuredOutputs(so: WireStructuredOutputs): OutputFormat | null {
  for (const k of Object.keys(so)) {
    if (!STRUCTURED_KEYS.includes(k) && so[k] != null && so[k] !== false) throw unsupportedParam(`structured_outputs.${k}`);
  }
  const given: OutputFormat[] = [];
  if (so.json != null)
    given.push({ type: 'json_schema', schema: schemaValue(so.json, 'structured_outputs.json'), param: 'structured_outputs.json' });
  if (so.regex != null) given.push({ type: 'regex', pattern: so.regex, param: 'structured_outputs.regex' });
  if (so.choice != null) given.push({ type: 'choice', choices: so.choice, param: 'structured_outputs.choice' });
  if (so.grammar != null) given.push({ type: 'grammar', grammar: so.grammar, param: 'structured_outputs.grammar' });
  if (so.json_object === true) given.push({ type: 'json_object', param: 'structured_outputs.json_object' });
  if (given.length > 1) {
    throw invalidParam('structured_outputs', `'structured_outputs' may set only one of ${STRUCTURED_KEYS.join(', ')}.`);
  }
  return given[0] ?? null;
}

/** A schema given as an object, a JSON string (vLLM accepts both) or `true`. */
function schemaValue(v: unknown, param: string): unknown {
  if (typeof v !== 'string') return requestSchema(v, param);
  try {
    return requestSchema(JSON.parse(v), param);
  } catch (err) {
    if (err instanceof SyntaxError) throw invalidParam(param, `Invalid value for '${param}': the string is not valid JSON.`);
    throw err;
  }
}
