// The HTTP app: a factory so tests (and serve.ts) build it with their own options, logger and
// lifecycle and listen on any port. Route groups are plugins; what every route shares (the
// model gate, JSON parsing, the OpenAI error shape, the request log line) is here, as hooks and
// handlers.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { OutputStage } from '../chat/pipeline.js';
import type { ChatRequest } from '../protocols/chat-request.js';
import type { GenerationRequest } from '../engine/types.js';
import { ApiError, invalidJson, toApiError } from './errors.js';
import type { Lifecycle, ModelRuntime } from './lifecycle.js';
import { healthRoutes } from './routes/health.js';
import { modelsRoutes } from './routes/models.js';
import { chatCompletionsRoutes } from './routes/chat-completions.js';
import { completionsRoutes } from './routes/completions.js';

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
  /** Context length: prompt + completion. */
  maxSeqLen: number;
  /** --disable-thinking: chats are rendered with enable_thinking false. */
  disableThinking?: boolean;
}

/** What the chat output plan is decided from: the request, the model, the rendered prompt. */
export interface ChatOutputContext {
  request: ChatRequest;
  runtime: ModelRuntime;
  /** The prompt as the chat template rendered it (does it leave a think block open? …). */
  promptText: string;
}

/**
 * Per sequence: the output stages (reasoning splitter, tool-call parser) and what the engine must
 * enforce while sampling (tool grammar, thinking budget). Stages hold state: one plan per sequence.
 */
export interface ChatOutputPlan {
  stages: OutputStage[];
  /** Keep special tokens in the text even when the request skips them: the stages read tags that some models spell as special tokens. */
  keepSpecialTokens?: boolean;
  constraint?: GenerationRequest['constraint'];
  thinkingBudget?: GenerationRequest['thinkingBudget'];
}

export type ChatOutputFactory = (ctx: ChatOutputContext) => ChatOutputPlan;

export interface AppDeps {
  options: AppOptions;
  logger: FastifyBaseLogger;
  lifecycle: Lifecycle;
  /** Default: plain text, nothing enforced. */
  chatOutput?: ChatOutputFactory;
}

/** What route plugins get. */
export interface RouteDeps {
  options: AppOptions;
  chatOutput: ChatOutputFactory;
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

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export function buildApp(deps: AppDeps): FastifyInstance {
  const { options, lifecycle } = deps;
  const app = Fastify({
    loggerInstance: deps.logger,
    // One line per request is written by the hook below, not fastify's two.
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
  app.decorateRequest('generation', null);

  // Bodies are JSON whatever content-type the client sent (curl -d sends a form type), with
  // OpenAI's message when they are not.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(invalidJson('the body is empty'), undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(invalidJson((err as Error).message), undefined);
    }
  });

  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config?.needsModel) request.runtime = lifecycle.require();
  });

  // One log line per request, written when its response closes: finished, or cut off by the
  // client (fastify's onResponse does not run for those).
  app.addHook('onRequest', async (request, reply) => {
    let logged = false;
    const logLine = (aborted: boolean): void => {
      if (logged) return;
      logged = true;
      const g = request.generation;
      const elapsedMs = Math.round(reply.elapsedTime);
      if (g === null) {
        request.log.debug({ method: request.method, url: request.url, status: reply.statusCode, elapsedMs, aborted }, 'request');
        return;
      }
      request.log.info(
        {
          model: options.modelName,
          route: request.routeOptions.url,
          status: reply.statusCode,
          promptTokens: g.promptTokens,
          completionTokens: g.completionTokens,
          ttftMs: g.ttftMs,
          elapsedMs,
          toolsUsed: g.toolsUsed,
          finish: g.finishReasons,
        },
        aborted ? 'request aborted by the client' : 'request completed',
      );
    };
    reply.raw.once('finish', () => logLine(false));
    reply.raw.once('close', () => logLine(!reply.raw.writableFinished));
  });

  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    const api = toApiError(err, options.maxBodyBytes);
    // 503s (no model yet, engine full) are expected states, not failures.
    if (api.status >= 500 && api.status !== 503) request.log.error({ err }, 'request failed');
    void reply.code(api.status).headers(api.headers).send(api.toBody());
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = (['GET', 'POST'] as const).filter((method) => app.hasRoute({ method, url: path }));
    if (allowed.length > 0) {
      const err = new ApiError(405, `Method ${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}.`, {
        code: 'method_not_allowed',
      });
      return reply.code(405).header('allow', allowed.join(', ')).send(err.toBody());
    }
    return reply.code(404).send(new ApiError(404, `Invalid URL (${request.method} ${path})`, { code: 'not_found' }).toBody());
  });

  const routeDeps: RouteDeps = { options, chatOutput: deps.chatOutput ?? (() => ({ stages: [] })) };
  void app.register(healthRoutes, routeDeps);
  void app.register(modelsRoutes, routeDeps);
  void app.register(chatCompletionsRoutes, routeDeps);
  void app.register(completionsRoutes, routeDeps);
  return app;
}
