// One protocol = one encapsulated fastify plugin under its URL prefix, with its own error shape:
// every error under the prefix (a thrown ApiError, a schema or body-parsing failure, the model
// gate's 503, and 404/405 for paths no route matches) is turned into an ApiError the same way for
// every protocol, then rendered by the protocol's renderer. Adding a protocol is one
// ProtocolRoutes value and one line in app.ts's PROTOCOLS.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { methodNotAllowed, routeNotFound, type ApiError, type ErrorRenderer } from '../common/api-error.js';
import type { RouteDeps } from './app.js';
import { toApiError } from './framework-errors.js';

export interface ProtocolRoutes {
  /** URL prefix of its routes ('/v1' for OpenAI's); its error handler and 404/405 cover everything under it. */
  prefix: string;
  /** Its error body (OpenAI: {error: {message, type, code, param}}). */
  renderError: ErrorRenderer;
  /** The status to send, where the protocol's differs from the ApiError's (Anthropic: 529 for a busy engine). */
  errorStatus?: (err: ApiError) => number;
  /** Route groups, with paths relative to the prefix. */
  routes: FastifyPluginAsync<RouteDeps>[];
}

/** Methods the routes answer; a path that has a route for another of these is a 405, not a 404. */
const METHODS = ['GET', 'POST', 'DELETE'] as const;

/**
 * Sets `scope`'s error and not-found handlers: errors become ApiErrors (framework-errors.ts) and
 * go out with their status and headers in `render`'s body. The app root uses it too, with the
 * default shape, for routes outside any protocol (/health) and paths outside every prefix.
 */
export function renderErrorsWith(
  scope: FastifyInstance,
  render: ErrorRenderer,
  bodyLimit: number,
  status: (err: ApiError) => number = (err) => err.status,
): void {
  scope.setErrorHandler((err, request, reply) => {
    const api = toApiError(err, bodyLimit);
    // 503s (no model yet, engine full) are expected states, not failures.
    if (api.status >= 500 && api.status !== 503) request.log.error({ err }, 'request failed');
    void reply.code(status(api)).headers(api.headers).send(render(api));
  });
  // Every route registered from here on, as a pattern (`/v1/conversations/:id` matches any id),
  // so that a path with a route under another method is a 405 however its parameters read.
  const routes: { method: string; pattern: RegExp }[] = [];
  scope.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, pattern: routePattern(route.url ?? route.path) });
  });
  scope.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = METHODS.filter((method) => routes.some((r) => r.method === method && r.pattern.test(path)));
    const api = allowed.length > 0 ? methodNotAllowed(request.method, path, allowed) : routeNotFound(request.method, path);
    return reply.code(status(api)).headers(api.headers).send(render(api));
  });
}

/** A fastify route URL as a whole-path pattern: `:name` is one path segment, `*` anything. */
function routePattern(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z_][\w]*|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`);
}

/** Registers a protocol's routes as one encapsulated plugin under its prefix, with its error shape. */
export function registerProtocol(app: FastifyInstance, protocol: ProtocolRoutes, deps: RouteDeps): void {
  const plugin: FastifyPluginAsync = async (scope) => {
    renderErrorsWith(scope, protocol.renderError, deps.options.maxBodyBytes, protocol.errorStatus);
    for (const routes of protocol.routes) await scope.register(routes, deps);
  };
  void app.register(plugin, { prefix: protocol.prefix });
}
