// GET / and GET /dashboard/<file>: the web dashboard's static assets (dashboard/ at the repository
// root: index.html, app.js, style.css; no build step). Open to every client, like /health: the
// page asks for the API key itself and sends it on every /admin/ and /v1/ call, which stay behind
// auth. Only the files listed here are served; they are read once, when the app is built, and
// answered with an ETag (304 on If-None-Match) and `Cache-Control: no-cache`, so a browser
// revalidates and picks up a new version at once.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../common/api-error.js';

// dist/src/server/routes/ → repository root → dashboard/ (shipped in the package beside registry/).
export const DASHBOARD_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'dashboard');

const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The assets found in `dir`; a missing file is left out (its URL then answers 404). */
export function loadDashboardAssets(dir: string = DASHBOARD_DIR): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const [name, type] of Object.entries(ASSETS)) {
    let body: Buffer;
    try {
      body = readFileSync(join(dir, name));
    } catch {
      continue;
    }
    out.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 20)}"` });
  }
  return out;
}

// The page runs only its own script and style and talks only to this server.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function send(asset: Asset, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  void reply
    .header('etag', asset.etag)
    .header('cache-control', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CSP)
    .header('referrer-policy', 'no-referrer');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

export const dashboardRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, { dir }) => {
  const assets = loadDashboardAssets(dir);
  const index = assets.get('index.html');
  if (index === undefined) {
    app.log.warn({ dir: dir ?? DASHBOARD_DIR }, 'dashboard assets not found: GET / is not served');
    return;
  }
  const config = { openAccess: true };
  app.get('/', { config }, async (request, reply) => send(index, request, reply));
  app.get<{ Params: { file: string } }>('/dashboard/:file', { config }, async (request, reply) => {
    const asset = assets.get(request.params.file);
    if (asset === undefined) throw new ApiError(404, `No dashboard file '${request.params.file.slice(0, 100)}'.`, { code: 'not_found' });
    return send(asset, request, reply);
  });
};
