// The JSON admin API the dashboard uses (and scripts without a browser): server state, the
// Library, loading a model (the swap runs in the background: poll /admin/state), live stats.
// Behind auth like every other route; errors in the OpenAI shape (the root's renderer).
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../common/api-error.js';
import type { RecentRequests } from '../../ops/recent-requests.js';
import type { Lifecycle } from '../lifecycle.js';
import type { ModelSwitcher } from '../model-swap.js';
import { LibraryFullError } from '../../model/library.js';

export interface AdminDeps {
  switcher: ModelSwitcher;
  recent: RecentRequests;
  lifecycle: Lifecycle;
}

const PATH_BODY = {
  type: 'object',
  required: ['path'],
  properties: { path: { type: 'string', minLength: 1, maxLength: 4096 } },
} as const;

const LOAD_BODY = {
  type: 'object',
  required: ['model'],
  properties: { model: { type: 'string', minLength: 1 }, recipe: { type: 'string', minLength: 1 } },
} as const;

export const adminRoutes: FastifyPluginAsync<AdminDeps> = async (app, { switcher, recent, lifecycle }) => {
  // The dashboard polls these: they stay out of the recent-request log.
  app.get('/admin/state', { config: { polled: true } }, async () => switcher.state());

  app.get('/admin/library', { config: { polled: true } }, async () => ({ models: switcher.library.list() }));

  app.post<{ Body: { path: string } }>('/admin/library', { schema: { body: PATH_BODY } }, async (request) => {
    try {
      return switcher.library.add(request.body.path);
    } catch (err) {
      const code = err instanceof LibraryFullError ? 'library_full' : 'not_a_model';
      throw new ApiError(400, (err as Error).message, { param: 'path', code });
    }
  });

  app.post<{ Body: { model: string; recipe?: string } }>('/admin/load', { schema: { body: LOAD_BODY } }, async (request, reply) => {
    const plan = switcher.plan(request.body.model, request.body.recipe);
    void switcher.start(plan);
    return reply.code(202).send({ state: 'loading' });
  });

  app.get('/admin/stats', { config: { polled: true } }, async () => {
    const s = lifecycle.runtime?.engine.stats() ?? null;
    return {
      running: s?.running ?? 0,
      waiting: s?.waiting ?? 0,
      kvUtilization: s !== null && s.kvBlocksTotal > 0 ? s.kvBlocksUsed / s.kvBlocksTotal : 0,
      tokensPerSec: recent.tokensPerSec(),
      requestsTotal: recent.requestsTotal,
      recent: recent.recent(),
    };
  });
};
