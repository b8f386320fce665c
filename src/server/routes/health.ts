// GET /health: 200 {status: "ok", state: "ready"} when a model is loaded and serving; before that (start-up,
// swap, no model) 503 `model_not_loaded` in the OpenAI error shape, with the server state beside
// it (`"state": "starting" | "no_model" | "loading"`). Open to every client: no API key, no rate
// limit (load balancers and probes poll it).
// With expert parallelism (--world-size 2) every answer carries `expertParallel: {worldSize, rank,
// peers}` (peers: "waiting" | "connected" | "lost"), and Ready without the worker rank connected is
// 503 {status: "degraded", state: "ready"} with the `expert_rank_unavailable` error: the model cannot run.
import type { FastifyPluginAsync } from 'fastify';
import { expertRankUnavailable, modelNotLoaded } from '../../common/api-error.js';
import { renderOpenAiError } from '../../protocols/openai/errors.js';
import type { Lifecycle } from '../lifecycle.js';

export const healthRoutes: FastifyPluginAsync<{ lifecycle: Lifecycle }> = async (app, { lifecycle }) => {
  app.get('/health', { config: { openAccess: true, polled: true } }, async (_request, reply) => {
    const state = lifecycle.state;
    const ep = lifecycle.expertParallel();
    const epField = ep === null ? {} : { expertParallel: { worldSize: ep.worldSize, rank: ep.rank, peers: ep.peers } };
    if (state === 'ready' && (ep === null || ep.peers === 'connected')) return { status: 'ok', state, ...epField };
    const degraded = state === 'ready';
    const err = degraded
      ? expertRankUnavailable(`expert-parallel rank 1 of ${ep!.worldSize} ${ep!.peers === 'lost' ? 'was lost' : 'is not connected'}`)
      : modelNotLoaded(state);
    return reply
      .code(err.status)
      .headers(err.headers)
      .send({ ...renderOpenAiError(err), ...(degraded ? { status: 'degraded' } : {}), state, ...epField });
  });
};
