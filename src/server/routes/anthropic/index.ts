// The Anthropic protocol: the Messages routes under /v1/messages (paths below are relative to
// it), errors in Anthropic's shape for everything under it, 404/405 included, and Anthropic's
// 529 for a busy engine. Keys are accepted as `x-api-key` (src/ops/auth.ts) as well as bearer.
import { anthropicErrorStatus, renderAnthropicError } from '../../../protocols/anthropic/errors.js';
import type { ProtocolRoutes } from '../../protocol-plugin.js';
import { messagesRoutes } from './messages.js';

export const anthropicRoutes: ProtocolRoutes = {
  prefix: '/v1/messages',
  renderError: renderAnthropicError,
  errorStatus: anthropicErrorStatus,
  routes: [messagesRoutes],
};
