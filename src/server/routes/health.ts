// GET /health: 200 {status: "ok"} when a model is loaded and serving; before that (start-up,
// swap, no model) the onRequest model gate answers 503 `model_not_loaded`. Open to every client:
// no API key, no rate limit (load balancers and probes poll it).
import type { FastifyPluginAsync } from 'fastify';
import type { RouteDeps } from '../app.js';

export const healthRoutes: FastifyPluginAsync<RouteDeps> = async (app) => {
  app.get('/health', { config: { needsModel: true, openAccess: true, polled: true } }, async () => ({ status: 'ok' }));
};
