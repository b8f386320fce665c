// GET /debug/profile: --profile's timing table from the engine (src/engine/profile.ts) as JSON, or
// with ?format=text as the table printed at shutdown. Outside every protocol's prefix (errors in
// the OpenAI shape); behind the API key like every route when --require-auth is on. Without
// --profile: 404 `profiling_disabled`; while no model is loaded: 503 `model_not_loaded`.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../common/api-error.js';
import type { ProfileSnapshot } from '../../engine/profile.js';
import { formatProfileTable } from '../../ops/profile-table.js';

export interface DebugDeps {
  /** The loaded engine's table; null when svc was started without --profile. */
  profile: (() => Promise<ProfileSnapshot | null>) | null;
}

function profilingDisabled(): ApiError {
  return new ApiError(404, 'Profiling is off: start svc with --profile to collect per-op timings.', { code: 'profiling_disabled' });
}

const querystring = {
  type: 'object',
  properties: { format: { type: 'string', enum: ['json', 'text'] } },
};

export const debugRoutes: FastifyPluginAsync<DebugDeps> = async (app, { profile }) => {
  app.get<{ Querystring: { format?: 'json' | 'text' } }>('/debug/profile', { schema: { querystring } }, async (request, reply) => {
    const snapshot = profile === null ? null : await profile();
    if (snapshot === null) throw profilingDisabled();
    if (request.query.format === 'text') return reply.type('text/plain; charset=utf-8').send(formatProfileTable(snapshot));
    return snapshot;
  });
};
