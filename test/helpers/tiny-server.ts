// Starts the real thing in-process for end-to-end tests: the engine running svc-tiny-chat, the
// runtime (tokenizer, template, MODEL.toml), the app on a random loopback port, and an official
// `openai` client pointed at it.
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { pino } from 'pino';
import { startEngine, type EngineOptions, type RunningEngine } from '../../src/engine/engine-client.js';
import { buildApp, type AppDeps, type AppOptions } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import { closeModelRuntime, createModelRuntime, type RuntimeSettings } from '../../src/server/runtime.js';
import { planChatOutput } from '../../src/chat/output-plan.js';
import { TINY_CHAT } from './paths.js';

export const TINY_MAX_SEQ_LEN = 2048;

export const TINY_OPTIONS: AppOptions = {
  modelName: 'svc-tiny-chat',
  maxBodyBytes: 1024 * 1024,
  defaultMinP: 0.08,
  defaultTopNSigma: 1.0,
  toolMaxTokens: 8192,
  requestTimeoutSec: 60,
};

export interface TinyServer {
  engine: RunningEngine;
  runtime: ModelRuntime;
  app: ReturnType<typeof buildApp>;
  base: string;
  client: OpenAI;
  close(): Promise<void>;
}

export async function startTinyServer(
  settings: RuntimeSettings = { disableThinking: false },
  options: Partial<AppOptions> = {},
  engineOptions: Partial<EngineOptions> = {},
  /** Keys, rate limiter, logger (default: a pino logger at warn). */
  deps: Partial<Pick<AppDeps, 'apiKeys' | 'rateLimiter' | 'logger'>> = {},
): Promise<TinyServer> {
  const modelPath = engineOptions.modelPath ?? TINY_CHAT;
  const engine = await startEngine({
    modelPath,
    fastLoad: true,
    kvCacheDtype: 'bf16',
    maxSeqLen: TINY_MAX_SEQ_LEN,
    maxBatchSize: 8,
    maxPrefillTokens: 2048,
    maxNumSeqs: 16,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 0,
    blockSize: 16,
    enablePrefixCaching: false,
    swapSpaceBytes: 0,
    ...engineOptions,
  });
  const lifecycle = new Lifecycle();
  const { runtime } = createModelRuntime(modelPath, options.modelName ?? TINY_OPTIONS.modelName, engine, settings);
  await runtime.prompts?.ready();
  lifecycle.setReady(runtime);
  const app = buildApp({
    options: { ...TINY_OPTIONS, disableThinking: settings.disableThinking, ...options },
    logger: pino({ level: 'warn' }),
    lifecycle,
    chatOutput: planChatOutput,
    ...deps,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x', maxRetries: 0 });
  return {
    engine,
    runtime,
    app,
    base,
    client,
    async close() {
      await app.close();
      await closeModelRuntime(runtime);
      await engine.shutdown();
    },
  };
}
