// A request's failure, as any layer reports it and every protocol renders it: an HTTP status, a
// neutral code (snake_case, the same word in every protocol), a message for people, the request
// field at fault and extra response headers. No wire shape here: each protocol has its renderer
// (OpenAI's `{error: {message, type, code, param}}` is src/protocols/openai/errors.ts).

export interface ApiErrorOptions {
  /** Neutral code: 'invalid_json', 'context_length_exceeded', 'model_not_loaded', … (null: a plain bad value). */
  code?: string | null;
  /** The request field at fault, as a path (`messages[0].role`). */
  param?: string | null;
  /** Extra response headers (Retry-After on retriable 503s, Allow on 405s). */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    message: string,
    opts: ApiErrorOptions = {},
  ) {
    super(message);
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }
}

/** A protocol's error body for an ApiError (what is sent with its status and headers). */
export type ErrorRenderer = (err: ApiError) => unknown;

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
export function modelNotLoaded(state?: string): ApiError {
  const message =
    state === 'no_model'
      ? 'No model is loaded: load one (POST /admin/load or the dashboard Library) and retry.'
      : state === 'loading'
        ? 'A model is loading (a swap); retry shortly.'
        : 'No model is loaded yet; retry shortly.';
  return new ApiError(503, message, {
    code: 'model_not_loaded',
    headers: { 'retry-after': '1' },
  });
}

/** Retriable 503: the engine's queue is full. */
export function serverBusy(detail: string): ApiError {
  return new ApiError(503, `The server is busy: ${detail}. Retry shortly.`, {
    code: 'server_busy',
    headers: { 'retry-after': '1' },
  });
}

/**
 * Retriable 503: expert parallelism's other rank (--world-size 2) is not connected, so the model
 * cannot run; /health reports the same (`expertParallel.peers`).
 */
export function expertRankUnavailable(detail: string): ApiError {
  return new ApiError(503, `The model cannot run right now: ${detail}. Retry once it is back.`, {
    code: 'expert_rank_unavailable',
    headers: { 'retry-after': '5' },
  });
}

/** Request plus completion would not fit the model's context window. */
export function contextLengthExceeded(message: string, param = 'messages'): ApiError {
  return new ApiError(400, message, { code: 'context_length_exceeded', param });
}

/** A generation cut off by --request-timeout (the server's doing: OpenAI reports it as a server_error). */
export function requestTimedOut(): ApiError {
  return new ApiError(408, "The request ran past the server's time limit (--request-timeout) and was stopped.", {
    code: 'request_timeout',
  });
}

/** A generation the engine could not finish (worker crash, kernel failure). */
export function engineFailure(message: string | undefined): ApiError {
  return new ApiError(500, `The engine failed while generating: ${message ?? 'unknown error'}`, { code: 'engine_error' });
}

/** The error a finished generation reports instead of a result, if any: an engine failure or a timeout. */
export function generationError(done: { engineReason: string; message?: string } | undefined): ApiError | null {
  if (done?.engineReason === 'error') return engineFailure(done.message);
  if (done?.engineReason === 'timeout') return requestTimedOut();
  return null;
}

/** No route at this path. */
export function routeNotFound(method: string, path: string): ApiError {
  return new ApiError(404, `Invalid URL (${method} ${path})`, { code: 'not_found' });
}

/** A route exists at this path, for other methods. */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): ApiError {
  return new ApiError(405, `Method ${method} is not allowed on ${path}; use ${allowed.join(' or ')}.`, {
    code: 'method_not_allowed',
    headers: { allow: allowed.join(', ') },
  });
}

/** An unexpected exception: our bug, reported in the protocol's shape while the server keeps serving. */
export function internalError(message: string): ApiError {
  return new ApiError(500, `The server had an error while processing your request: ${message}`, { code: 'internal_error' });
}
