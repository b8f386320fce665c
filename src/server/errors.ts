// Errors as every protocol route reports them: OpenAI's shape {error: {message, type, code, param}}.
// Handlers throw ApiError; the app's error handler turns it (and anything else) into that body.

export type ErrorType = 'invalid_request_error' | 'not_found_error' | 'server_error';

export interface ErrorBody {
  error: { message: string; type: ErrorType; code: string | null; param: string | null };
}

export class ApiError extends Error {
  readonly type: ErrorType;
  readonly code: string | null;
  readonly param: string | null;
  /** Extra response headers (Retry-After on retriable 503s). */
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    message: string,
    opts: { type?: ErrorType; code?: string | null; param?: string | null; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.type = opts.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

/** 400 for a request field with a bad value; `param` is the field's path (messages[0].role). */
export function invalidParam(param: string, message: string, code: string | null = null): ApiError {
  return new ApiError(400, message, { param, code });
}

/** 400 for a field svc accepts in the schema but does not implement (yet). */
export function unsupportedParam(param: string, detail = ''): ApiError {
  return new ApiError(400, `'${param}' is not supported by this server${detail ? `: ${detail}` : ''}.`, {
    param,
    code: 'unsupported_parameter',
  });
}

/** Retriable 503 while no model is loaded (start-up, swap). Same shape /health reports. */
export function modelNotLoaded(): ApiError {
  return new ApiError(503, 'No model is loaded yet; retry shortly.', {
    code: 'model_not_loaded',
    headers: { 'retry-after': '1' },
  });
}

/** Request plus completion would not fit the model's context window. */
export function contextLengthExceeded(message: string, param = 'messages'): ApiError {
  return new ApiError(400, message, { code: 'context_length_exceeded', param });
}

// ---------------------------------------------------------------------------------------------
// Mapping framework errors (schema validation, body parsing) to the shape above.

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

/** A generation cut off by --request-timeout. */
export function requestTimedOut(): ApiError {
  return new ApiError(408, "The request ran past the server's time limit (--request-timeout) and was stopped.", {
    type: 'server_error',
    code: 'request_timeout',
  });
}

/** The error a finished generation reports instead of a result, if any: an engine failure or a timeout. */
export function generationError(done: { engineReason: string; message?: string } | undefined): ApiError | null {
  if (done?.engineReason === 'error') return engineFailure(done.message);
  if (done?.engineReason === 'timeout') return requestTimedOut();
  return null;
}

/** A generation the engine could not finish (worker crash, kernel failure). */
export function engineFailure(message: string | undefined): ApiError {
  return new ApiError(500, `The engine failed while generating: ${message ?? 'unknown error'}`, { code: 'engine_error' });
}

interface FrameworkError {
  message: string;
  code?: string;
  statusCode?: number;
  validation?: unknown;
  validationContext?: string;
}

/** Any thrown value → the shaped error to send. */
export function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & FrameworkError;
  if (Array.isArray(e.validation)) return fromSchemaErrors(e.validation as SchemaError[], e.validationContext);
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return bodyTooLarge(bodyLimit);
  const status = e.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return new ApiError(status, e.message, { code: e.code ?? null });
  // Anything else is our bug: report it in the shape and keep serving.
  return new ApiError(500, `The server had an error while processing your request: ${e.message}`, { code: 'internal_error' });
}
