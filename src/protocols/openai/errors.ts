// OpenAI's error shape: `{error: {message, type, code, param}}`. The ApiError carries the status,
// code, message and param; the `type` is derived here, as OpenAI assigns it.
import type { ApiError } from '../../common/api-error.js';

export type OpenAiErrorType = 'invalid_request_error' | 'server_error';

export interface OpenAiErrorBody {
  error: { message: string; type: OpenAiErrorType; code: string | null; param: string | null };
}

/** server_error for the server's failures (5xx, and a generation stopped by --request-timeout); the rest are the request's. */
export function openAiErrorType(err: ApiError): OpenAiErrorType {
  return err.status >= 500 || err.code === 'request_timeout' ? 'server_error' : 'invalid_request_error';
}

export function renderOpenAiError(err: ApiError): OpenAiErrorBody {
  return { error: { message: err.message, type: openAiErrorType(err), code: err.code, param: err.param } };
}
