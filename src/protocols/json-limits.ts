// Depth and size limits on JSON values a request carries: the whole body (checked when it is
// parsed), and the free-form objects a protocol passes on to the chat template or the grammar
// compiler (tool parameter schemas, response-format schemas, chat_template_kwargs). Anything
// deeper or larger is a 400 naming the field, before a recursive consumer (template rendering,
// schema compilation) could run out of stack on it. Walks are iterative.
import { ApiError, invalidParam } from '../common/api-error.js';

export interface JsonLimit {
  /** Nesting levels of arrays and objects; the value itself is level 1 when it is one. */
  readonly maxDepth: number;
  /** Arrays, objects, keys and scalar values counted together. */
  readonly maxNodes: number;
}

/** A request body as a whole (anything nested deeper is refused, naming the top-level field). */
export const BODY_MAX_DEPTH = 64;
/** A JSON schema: tools[].function.parameters, response_format.json_schema.schema. */
export const SCHEMA_LIMIT: JsonLimit = { maxDepth: 32, maxNodes: 10_000 };
/** chat_template_kwargs. */
export const TEMPLATE_KWARGS_LIMIT: JsonLimit = { maxDepth: 16, maxNodes: 1_000 };

/** Depth (containers) and node count of `value`, stopping early once either passes its limit. */
function measure(value: unknown, limit: JsonLimit): { depth: number; nodes: number } {
  let depth = 0;
  let nodes = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, level] = stack.pop()!;
    nodes++;
    if (v === null || typeof v !== 'object') continue;
    if (level > depth) depth = level;
    if (depth > limit.maxDepth || nodes > limit.maxNodes) break;
    if (Array.isArray(v)) {
      for (const item of v) stack.push([item, level + 1]);
    } else {
      for (const item of Object.values(v as Record<string, unknown>)) {
        nodes++;
        stack.push([item, level + 1]);
      }
    }
  }
  return { depth, nodes };
}

/** 400 naming `param` when `value` is nested deeper or is larger than `limit`. */
export function checkJsonLimit(value: unknown, param: string, limit: JsonLimit): void {
  const { depth, nodes } = measure(value, limit);
  if (depth > limit.maxDepth) {
    throw invalidParam(
      param,
      `'${param}' is nested too deeply: at most ${limit.maxDepth} levels of objects and arrays are accepted.`,
      'too_deep',
    );
  }
  if (nodes > limit.maxNodes) {
    throw invalidParam(param, `'${param}' is too large: at most ${limit.maxNodes} keys and values are accepted.`, 'too_large');
  }
}

/** 400 when a parsed request body nests deeper than BODY_MAX_DEPTH, naming the top-level field where. */
export function checkBodyDepth(body: unknown): void {
  if (body === null || typeof body !== 'object') return;
  const limit = { maxDepth: BODY_MAX_DEPTH, maxNodes: Number.MAX_SAFE_INTEGER };
  if (Array.isArray(body)) {
    if (measure(body, limit).depth > BODY_MAX_DEPTH) throw tooDeep(null);
    return;
  }
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    // The body is level 1, so its fields may nest one level less.
    if (measure(value, { ...limit, maxDepth: BODY_MAX_DEPTH - 1 }).depth > BODY_MAX_DEPTH - 1) throw tooDeep(key);
  }
}

function tooDeep(param: string | null): ApiError {
  const where = param === null ? 'The request body' : `'${param}'`;
  return new ApiError(
    400,
    `${where} is nested too deeply: a request body may nest at most ${BODY_MAX_DEPTH} levels of objects and arrays.`,
    {
      code: 'too_deep',
      param,
    },
  );
}

/**
 * A structured-output schema from a request, as every protocol takes it: an object (or `true`, any
 * value), bounded like a tool schema. Anything else is a 400 naming `param`.
 */
export function requestSchema(value: unknown, param: string): Record<string, unknown> {
  if (value === true) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidParam(param, `Invalid value for '${param}': expected a JSON schema object.`);
  }
  checkJsonLimit(value, param, SCHEMA_LIMIT);
  return value as Record<string, unknown>;
}
