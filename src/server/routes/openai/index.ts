// The OpenAI protocol: its routes under /v1 (paths below are relative to it), errors in OpenAI's
// shape for everything under /v1, 404/405 included.
import { renderOpenAiError } from '../../../protocols/openai/errors.js';
import type { ProtocolRoutes } from '../../protocol-plugin.js';
import { chatCompletionsRoutes } from './chat-completions.js';
import { completionsRoutes } from './completions.js';
import { modelsRoutes } from './models.js';

export const openAiRoutes: ProtocolRoutes = {
  prefix: '/v1',
  renderError: renderOpenAiError,
  routes: [modelsRoutes, chatCompletionsRoutes, completionsRoutes],
};
