// GET /metrics: the Prometheus text exposition (src/ops/metrics.ts), outside every protocol's
// prefix. Behind the API key like every route when --require-auth is on (no `openAccess`), and
// counted by the rate limiter; answered without a model (the engine gauges then read 0). Its log
// line is at debug: scrapers call it every few seconds.
import type { FastifyPluginAsync } from 'fastify';
import type { ServerMetrics } from '../../ops/metrics.js';

export const metricsRoutes: FastifyPluginAsync<{ metrics: ServerMetrics }> = async (app, { metrics }) => {
  app.get('/metrics', { config: { polled: true } }, async (_request, reply) => {
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });
};
