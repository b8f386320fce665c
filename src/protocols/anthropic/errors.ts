// Anthropic's error shape: `{type: "error", error: {type, message}}`, the type derived from the
// ApiError's status (and code) as Anthropic assigns it. One difference in status: a busy engine
// (503 server_busy) is Anthropic's 529 overloaded_error, which its clients retry.
import type { ApiError } from '../../common/api-error.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

/** The status Anthropic's clients expect: 529 for a busy engine, the ApiError's own otherwise. */
export function anthropicErrorStatus(err: ApiError): number {
  return err.code === 'server_busy' ? 529 : err.status;
}

export function anthropicErrorType(err: ApiError): AnthropicErrorType {
  // No model loaded yet (503) and a full queue both mean "retry shortly".
  if (err.status === 503 || err.code === 'server_busy') return 'overloaded_error';
  switch (err.status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
  }
  // A generation stopped by --request-timeout is the server's doing, as every 5xx.
  if (err.status >= 500 || err.code === 'request_timeout') return 'api_error';
  return 'invalid_request_error';
}

export function renderAnthropicError(err: ApiError): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(err), message: err.message } };
}
