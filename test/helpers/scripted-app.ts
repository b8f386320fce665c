// The real app over a scripted engine, for fast app-level tests of what sits around the routes
// (auth, rate limits): the tokenizer and chat template are svc-tiny-chat's real ones; the engine
// plays back a fixed list of token ids, records its jobs and honours cancellation. (A fuller
// scripted engine, with logprobs and finish reasons, lives in test/unit/openai-protocol.test.ts.)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import type { Engine, EngineEvent, GenerationHandle, GenerationRequest } from '../../src/engine/types.js';
import { buildApp, type AppDeps, type AppOptions } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import type { ChatOutputFactory } from '../../src/chat/output-plan.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { findChatTemplate } from '../../src/chat/template.js';
import { configFromHf } from '../../src/model/model-config.js';
import { TINY_CHAT } from './paths.js';
import { IDLE_ENGINE_STATS } from './engine-stats.js';

export const tinyTokenizer = loadTokenizer(TINY_CHAT);
const chatTemplate = findChatTemplate(TINY_CHAT);
const modelConfig = configFromHf(JSON.parse(readFileSync(join(TINY_CHAT, 'config.json'), 'utf8')));
export const IM_END = 151645;

export interface Script {
  ids: number[];
  /** Ids per tokens event (default 2). */
  chunk?: number;
  delayMs?: number;
}

export class ScriptedEngine implements Engine {
  readonly maxSequences = 16;
  /** Every job: its request, whether it was cancelled, how many ids it sent, whether it ended. */
  readonly jobs: { req: GenerationRequest; cancelled: boolean; sent: number; ended: boolean }[] = [];
  refuse: Error | null = null;

  constructor(public script: Script) {}

  submit(req: GenerationRequest): GenerationHandle {
    if (this.refuse) throw this.refuse;
    const job = { req, cancelled: false, sent: 0, ended: false };
    this.jobs.push(job);
    const s = this.script;
    async function* events(): AsyncGenerator<EngineEvent> {
      const ids = s.ids.slice(0, req.maxTokens);
      const chunk = s.chunk ?? 2;
      for (let i = 0; i < ids.length; i += chunk) {
        await delay(s.delayMs ?? 0);
        if (job.cancelled) {
          job.ended = true;
          yield { type: 'done', reason: 'cancelled' };
          return;
        }
        const part = ids.slice(i, i + chunk);
        job.sent += part.length;
        yield { type: 'tokens', ids: part };
      }
      job.ended = true;
      yield { type: 'done', reason: ids.length < s.ids.length ? 'length' : 'stop' };
    }
    return { events: events(), cancel: () => void (job.cancelled = true) };
  }

  stats() {
    return { ...IDLE_ENGINE_STATS };
  }

  async shutdown(): Promise<void> {}
}

export const SCRIPTED_OPTIONS: AppOptions = {
  modelName: 'svc-tiny-chat',
  maxBodyBytes: 64 * 1024,
  defaultMinP: 0.08,
  defaultTopNSigma: 1.0,
  toolMaxTokens: 300,
  requestTimeoutSec: 300,
};
export const SCRIPTED_MAX_SEQ_LEN = 512;

export interface ScriptedAppSetup {
  script?: Script;
  /** Default true: a model is loaded. */
  ready?: boolean;
  apiKeys?: AppDeps['apiKeys'];
  rateLimiter?: AppDeps['rateLimiter'];
  /** Default: plain text, nothing parsed. */
  chatOutput?: ChatOutputFactory;
  /** Overrides of SCRIPTED_OPTIONS (--allowed-hosts, --allowed-origins, HTTP limits …). */
  options?: Partial<AppOptions>;
  /** Stored responses and conversations; default: a new store. */
  store?: AppDeps['store'];
  /** --dump's file; default: none. */
  dump?: AppDeps['dump'];
  /** The engine; default: a ScriptedEngine of `script`. */
  engine?: ScriptedEngine;
  /** --world-size (2: the head of expert parallelism); default 1. */
  worldSize?: number;
}

/** The app, its engine, the log records it wrote and its lifecycle. */
export function scriptedApp(setup: ScriptedAppSetup = {}) {
  const engine = setup.engine ?? new ScriptedEngine(setup.script ?? { ids: [...tinyTokenizer.encode('Paris.'), IM_END] });
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const lifecycle = new Lifecycle('starting', setup.worldSize ?? 1);
  const runtime: ModelRuntime = {
    engine,
    tokenizer: tinyTokenizer,
    chatTemplate,
    eosTokenIds: [IM_END, 151643],
    modelConfig,
    maxSeqLen: SCRIPTED_MAX_SEQ_LEN,
    samplingDefaults: {},
    chat: { toolCallParser: 'hermes', reasoning: false, disableThinking: false, maxThinkingBudget: null },
  };
  if (setup.ready ?? true) lifecycle.setReady(runtime);
  const app = buildApp({
    options: { ...SCRIPTED_OPTIONS, ...setup.options },
    logger: pino({ level: 'debug' }, sink),
    lifecycle,
    apiKeys: setup.apiKeys,
    rateLimiter: setup.rateLimiter,
    chatOutput: setup.chatOutput,
    store: setup.store,
    dump: setup.dump,
  });
  return { app, engine, lines, lifecycle, runtime };
}
