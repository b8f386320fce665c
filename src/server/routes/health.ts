// GET /health: 200 {status: "ok", state: "ready"} when a model is loaded and serving; before that (start-up,
// swap, no model) 503 `model_not_loaded` in the OpenAI error shape, with the server state beside
// it (`"state": "starting" | "no_model" | "loading"`). Open to every client: no API key, no rate
// limit (load balancers and probes poll it).
import type { FastifyPluginAsync } from 'fastify';
import { modelNotLoaded } from '../../common/api-error.js';
import { renderOpenAiError } from '../../protocols/openai/errors.js';
import type { Lifecycle } from '../lifecycle.js';

export const healthRoutes: FastifyPluginAsync<{ lifecycle: Lifecycle }> = async (app, { lifecycle }) => {
  app.get('/health', { config: { openAccess: true, polled: true } }, async (_request, reply) => {
    const state = lifecycle.state;
    if (state === 'ready') return { status: 'ok', state };
    const err = modelNotLoaded(state);
    return reply
      .code(err.status)
      .headers(err.headers)
      .send({ ...renderOpenAiError(err), state });
  });
};
