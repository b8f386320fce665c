// The HTTP app: a factory so tests (and serve.ts) build it with their own options, logger and
// lifecycle and listen on any port. What every route shares (the request outcome for the log line
// and the metrics, auth, rate limits, the model gate, JSON parsing) is here, as hooks. Each protocol is an encapsulated plugin under its prefix
// with its own error shape (protocol-plugin.ts); /health and paths outside every prefix answer
// errors in the OpenAI shape.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ChatOutputFactory } from '../chat/output-plan.js';
import type { ModelRuntime } from '../chat/model-runtime.js';
import { registerAuth, type ApiKeys } from '../ops/auth.js';
import { registerDump } from '../ops/dump.js';
import type { DumpFile } from '../ops/dump-file.js';
import { ServerMetrics } from '../ops/metrics.js';
import { RecentRequests } from '../ops/recent-requests.js';
import { registerRequestOutcome, requestLogSink } from '../ops/request-log.js';
import { registerRateLimit, type RateLimiter } from '../ops/rate-limiter.js';
import { renderOpenAiError } from '../protocols/openai/errors.js';
import { httpLimitsFromEnv, httpServer, type HttpLimits } from './http-server.js';
import type { ImageOptions } from './images/load.js';
import type { AutoSwap } from './auto-swap.js';
import type { Lifecycle } from './lifecycle.js';
import type { ModelSwitcher } from './model-swap.js';
import { registerProtocol, renderErrorsWith, type ProtocolRoutes } from './protocol-plugin.js';
import { registerRequestGuards } from './request-guards.js';
import { adminRoutes } from './routes/admin.js';
import { anthropicRoutes } from './routes/anthropic/index.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { debugRoutes } from './routes/debug.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { openAiRoutes } from './routes/openai/index.js';
import { tokenizeRoutes } from './routes/tokenize.js';
import { responsesProtocols } from './routes/responses/index.js';
import { RecordStore } from './store.js';

/** The protocols served, each under its own prefix (a longer prefix inside another one wins there). */
const PROTOCOLS: ProtocolRoutes[] = [openAiRoutes, anthropicRoutes, ...responsesProtocols];

export interface AppOptions {
  /** Name /v1/models reports and responses carry. */
  modelName: string;
  /** Largest accepted request body (SVC_MAX_BODY_BYTES). */
  maxBodyBytes: number;
  defaultMinP: number;
  defaultTopNSigma: number;
  /** Cap on the whole completion when a request has tools. */
  toolMaxTokens: number;
  /** Per-request limit in seconds; 0 = none. */
  requestTimeoutSec: number;
  /** --disable-thinking: chats are rendered with enable_thinking false. */
  disableThinking?: boolean;
  /** --auto-compact: chat prompts past this fraction of the context are compacted (src/chat/auto-compact.ts); null or absent = off. */
  autoCompact?: number | null;
  /** Connection limits and timeouts (SVC_* in the environment when not given). */
  http?: HttpLimits;
  /** --allowed-hosts: Host names accepted besides loopback ones when bound to loopback. */
  allowedHosts?: readonly string[];
  /** --allowed-origins: CORS origins (`*` = any); none = no CORS. */
  allowedOrigins?: readonly string[];
  /** Stored responses + conversations kept (SVC_RESPONSES_STORE_MAX); default DEFAULT_STORE_MAX. */
  storeMaxRecords?: number;
  /** Bytes of stored items kept (SVC_RESPONSES_STORE_MAX_BYTES); default DEFAULT_STORE_MAX_BYTES. */
  storeMaxBytes?: number;
  /** --profile: GET /debug/profile serves the engine's timing table (404 without it). */
  profile?: boolean;
  /** Image input: caps, fetch timeout, private addresses (src/server/images/); default DEFAULT_IMAGE_OPTIONS. */
  images?: ImageOptions;
}

export interface AppDeps {
  options: AppOptions;
  logger: FastifyBaseLogger;
  lifecycle: Lifecycle;
  /** Default: plain text, nothing enforced. */
  chatOutput?: ChatOutputFactory;
  /** The accepted API keys (--require-auth); default: none needed. */
  apiKeys?: ApiKeys | null;
  /** The per-key rate limiter (SVC_RATE_LIMIT_*); default: none. */
  rateLimiter?: RateLimiter | null;
  /** Stored responses and conversations; default: a new store of `options.storeMaxRecords`. */
  store?: RecordStore;
  /** --dump's file (process-level: opened once by serve); default: nothing dumped. */
  dump?: DumpFile | null;
  /** The /admin/ API's model switcher (serve.ts); default: no /admin/ routes. */
  switcher?: ModelSwitcher | null;
  /** --auto-swap: run with each model-needing POST's body before it takes the runtime; default: none. */
  autoSwap?: AutoSwap | null;
}

/** What route plugins get. */
export interface RouteDeps {
  options: AppOptions;
  chatOutput: ChatOutputFactory;
  /** The process's stored responses and conversations (src/server/store.ts). */
  store: RecordStore;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route needs a loaded model: 503 model_not_loaded otherwise, request.runtime set if so. */
    needsModel?: boolean;
  }
  interface FastifyRequest {
    runtime: ModelRuntime | null;
  }
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const { options, lifecycle } = deps;
  const limits = options.http ?? httpLimitsFromEnv();
  // Connection limits, and malformed HTTP, 408 and 431 answered in the root's (OpenAI) shape.
  const server = httpServer(limits, deps.logger, renderOpenAiError);
  const app = Fastify({
    serverFactory: server.serverFactory,
    clientErrorHandler: server.clientErrorHandler,
    loggerInstance: deps.logger,
    // One line per request is written by src/ops/request-log.ts's hook, not fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.maxBodyBytes,
    return503OnClosing: true,
    ajv: {
      // OpenAI rejects "max_tokens": "5"; fastify's default would coerce it. `verbose` puts the
      // offending value into errors, for the message.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, verbose: true },
    },
  }) as unknown as FastifyInstance;

  app.decorateRequest('runtime', null);

  // First, so that every request ends in it, those refused by the hooks below included: one log
  // line and the request metrics per request, when its response closes (src/ops/request-log.ts).
  // The served name changes on a model swap (serve.ts updates options.modelName): read it per request.
  const servedName = () => options.modelName;
  const metrics = new ServerMetrics({
    model: servedName,
    engineStats: () => lifecycle.runtime?.engine.stats() ?? null,
    ...(lifecycle.worldSize > 1 ? { expertParallel: () => lifecycle.expertParallel()! } : {}),
  });
  const recent = new RecentRequests();
  registerRequestOutcome(app, [requestLogSink(servedName), metrics.record, recent.record]);
  // --dump: every exchange, refused ones included, as a line of the dump file (src/ops/dump.ts).
  registerDump(app, deps.dump ?? null);

  // The Host check first, then CORS (preflights need no key), JSON-only bodies with a body-idle
  // timeout, and the body parser (UTF-8, JSON, nesting depth): request-guards.ts.
  registerRequestGuards(app, {
    allowedHosts: options.allowedHosts ?? [],
    allowedOrigins: options.allowedOrigins ?? [],
    bodyIdleTimeoutSec: limits.bodyIdleTimeoutSec,
  });

  // API key, then the per-key rate limit (src/ops/), before anything else runs: every route but
  // those with `openAccess` (/health), the 404 handler included.
  registerAuth(app, deps.apiKeys ?? null);
  registerRateLimit(app, deps.rateLimiter ?? null);

  // A request keeps the runtime it took until its response closes: a swap drains them first.
  const takeRuntime = (request: FastifyRequest, reply: FastifyReply): void => {
    request.runtime = lifecycle.require();
    reply.raw.once('close', () => lifecycle.release());
  };
  const autoSwap = deps.autoSwap ?? null;
  app.addHook('onRequest', async (request, reply) => {
    if (!request.routeOptions.config?.needsModel) return;
    // With --auto-swap a POST's `model` may name another model: the runtime is taken once the body is read.
    if (autoSwap !== null && request.method === 'POST') return;
    takeRuntime(request, reply);
  });
  if (autoSwap !== null) {
    app.addHook('preHandler', async (request, reply) => {
      if (!request.routeOptions.config?.needsModel || request.runtime !== null) return;
      await autoSwap(request.body);
      takeRuntime(request, reply);
    });
  }

  // Outside every protocol's prefix (and on /health): the OpenAI shape, as before there were others.
  renderErrorsWith(app, renderOpenAiError, options.maxBodyBytes);

  const routeDeps: RouteDeps = {
    options,
    chatOutput: deps.chatOutput ?? (() => ({ stages: [] })),
    store: deps.store ?? new RecordStore(options.storeMaxRecords, options.storeMaxBytes),
  };
  void app.register(healthRoutes, { lifecycle });
  // The web dashboard's page and assets (open; the API calls it makes are not).
  void app.register(dashboardRoutes, {});
  void app.register(metricsRoutes, { metrics });
  void app.register(tokenizeRoutes, routeDeps);
  // The loaded model's engine answers; 503 model_not_loaded while there is none.
  const profile = () => lifecycle.require().engine.profile?.() ?? Promise.resolve(null);
  void app.register(debugRoutes, { profile: options.profile ? profile : null });
  if (deps.switcher) void app.register(adminRoutes, { switcher: deps.switcher, recent, lifecycle });
  for (const protocol of PROTOCOLS) registerProtocol(app, protocol, routeDeps);
  return app;
}
