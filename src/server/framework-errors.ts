// Framework errors → ApiError, the same for every protocol: fastify's JSON-schema validation
// (ajv), bodies that are not JSON or are too large, other 4xx it raises, and unexpected
// exceptions. Each protocol's error handler renders the result in its own shape.
import { ApiError, internalError, invalidParam, unsupportedParam } from '../common/api-error.js';

/** One JSON-schema validation failure as fastify reports it (ajv with `verbose`, so `data` is set). */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  data?: unknown;
}

/** '/messages/0/role' → 'messages[0].role' (the field path OpenAI-style clients print). */
export function paramPath(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').slice(1);
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const p of parts) {
    const key = p.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out === '' ? key : `.${key}`;
  }
  return out;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal number';
  const t = typeof value;
  return t === 'object' ? 'an object' : `a ${t}`;
}

function expected(type: unknown): string {
  const names: Record<string, string> = {
    string: 'a string',
    integer: 'an integer',
    number: 'a number',
    boolean: 'a boolean',
    object: 'an object',
    array: 'an array',
    null: 'null',
  };
  return String(type)
    .split(',')
    .map((t) => names[t] ?? t)
    .join(' or ');
}

/**
 * The most useful of ajv's errors as a 400: the deepest one (a bad array item says more than
 * "messages is invalid"); at equal depth an anyOf/oneOf summary beats its branches' complaints.
 */
export function fromSchemaErrors(errors: readonly SchemaError[], context: string | undefined): ApiError {
  const depth = (e: SchemaError): number => e.instancePath.split('/').length + (e.keyword === 'required' ? 1 : 0);
  const isSummary = (e: SchemaError): boolean => e.keyword === 'anyOf' || e.keyword === 'oneOf';
  let best = errors[0];
  for (const e of errors) {
    if (!best || depth(e) > depth(best) || (depth(e) === depth(best) && isSummary(e) && !isSummary(best))) best = e;
  }
  if (!best) return new ApiError(400, 'Invalid request.');
  const where = context && context !== 'body' ? `${context} ` : '';
  if (best.keyword === 'required') {
    const param = paramPath(best.instancePath, String(best.params.missingProperty));
    return invalidParam(param, `Missing required ${where}parameter: '${param}'.`);
  }
  if (best.keyword === 'additionalProperties') {
    const param = paramPath(best.instancePath, String(best.params.additionalProperty));
    return unsupportedParam(param, 'unrecognized request argument');
  }
  const param = paramPath(best.instancePath) || (context ?? 'body');
  switch (best.keyword) {
    case 'type':
      return invalidParam(
        param,
        `Invalid type for '${param}': expected ${expected(best.params.type)}, but got ${describe(best.data)} instead.`,
      );
    case 'anyOf':
    case 'oneOf':
      return invalidParam(param, `Invalid type for '${param}': got ${describe(best.data)}, which none of the accepted forms matches.`);
    case 'enum':
    case 'const': {
      const allowed = (best.params.allowedValues as unknown[] | undefined) ?? [best.params.allowedValue];
      return invalidParam(
        param,
        `Invalid value for '${param}': expected one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}, but got ${JSON.stringify(best.data)}.`,
      );
    }
    default:
      return invalidParam(param, `Invalid value for '${param}': ${best.message ?? 'not accepted'}.`);
  }
}

/** The body is not JSON at all. */
export function invalidJson(detail: string): ApiError {
  return new ApiError(400, `We could not parse the JSON body of your request: the body is not valid JSON (${detail}).`, {
    code: 'invalid_json',
  });
}

export function bodyTooLarge(limit: number): ApiError {
  return new ApiError(413, `The request body is too large: the limit is ${limit} bytes (SVC_MAX_BODY_BYTES).`, {
    code: 'request_too_large',
  });
}

interface FrameworkError {
  message: string;
  code?: string;
  statusCode?: number;
  validation?: unknown;
  validationContext?: string;
}

/** Any thrown value → the ApiError to render. */
export function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & FrameworkError;
  if (Array.isArray(e.validation)) return fromSchemaErrors(e.validation as SchemaError[], e.validationContext);
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return bodyTooLarge(bodyLimit);
  // Whatever recursion a request could still drive past the stack (a template, a schema) is the
  // request's nesting, not our failure: a 400, and the server keeps serving.
  if (/Maximum call stack size exceeded/i.test(e.message)) {
    return new ApiError(400, 'The request is nested too deeply to be processed.', { code: 'too_deep' });
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new ApiError(415, "Unsupported Content-Type: request bodies must be JSON sent as 'Content-Type: application/json' (UTF-8).", {
      code: 'unsupported_media_type',
    });
  }
  const status = e.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return new ApiError(status, e.message, { code: e.code ?? null });
  // Anything else is our bug: report it in the protocol's shape and keep serving.
  return internalError(e.message);
}
