// The Responses API: /v1/responses and /v1/conversations, OpenAI's error shape for everything
// under them (404/405 included). Two prefixes, one protocol; the store is RouteDeps.store.
import { renderOpenAiError } from '../../../protocols/openai/errors.js';
import type { ProtocolRoutes } from '../../protocol-plugin.js';
import { conversationsRoutes } from './conversations.js';
import { responsesRoutes } from './responses.js';

export const responsesProtocols: ProtocolRoutes[] = [
  { prefix: '/v1/responses', renderError: renderOpenAiError, routes: [responsesRoutes] },
  { prefix: '/v1/conversations', renderError: renderOpenAiError, routes: [conversationsRoutes] },
];
