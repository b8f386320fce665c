// POST /v1/completions (legacy): a prompt, a batch of prompts, token ids or a batch of token-id
// lists; each prompt runs n sequences through the same output pipeline as chat (plain text, no
// reasoning or tool parsing) → text_completion body, or chunks over SSE.
import type { FastifyPluginAsync } from 'fastify';
import { OutputPipeline } from '../../../chat/pipeline.js';
import { buildTextPrompt } from '../../../chat/prompt.js';
import { generationError } from '../../../common/api-error.js';
import { newResponseMeta } from '../../../protocols/openai/chat.js';
import {
  CompletionBuilder,
  CompletionChunkEncoder,
  decodeCompletionRequest,
  type CompletionBody,
} from '../../../protocols/openai/completions.js';
import { outputFormatConstraint } from '../../../chat/output-format.js';
import { structuredOutputProperties } from '../../../protocols/openai/structured.js';
import type { RouteDeps } from '../../app.js';
import { engineJob, resolveMaxTokens, runSequences, tokenUsage, withConstraint, type SequenceSpec } from '../../generate.js';
import { SseStream, streamSteps } from '../../sse.js';
import { generationProperties } from './chat-completions.js';

// Negative ids pass the schema and are refused by the decoder, which says what a token id is.
const tokenIds = { type: 'array', items: { type: 'integer' } };

const completionSchema = {
  type: 'object',
  required: ['prompt'],
  // A field svc does not know is refused (unsupported_parameter), as OpenAI does, never ignored.
  additionalProperties: false,
  properties: {
    ...generationProperties,
    ...structuredOutputProperties,
    prompt: {
      anyOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' } },
        tokenIds,
        { type: 'array', items: { ...tokenIds, minItems: 1 } },
      ],
    },
    echo: { type: ['boolean', 'null'] },
    suffix: { type: ['string', 'null'] },
    logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    best_of: { type: ['integer', 'null'], minimum: 1 },
  },
};

export const completionsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options }) => {
  app.post<{ Body: CompletionBody }>(
    '/completions',
    { schema: { body: completionSchema }, config: { needsModel: true } },
    async (request, reply) => {
      const runtime = request.runtime!;
      const req = decodeCompletionRequest(request.body, {
        ...options,
        model: runtime.samplingDefaults,
        vocabSize: runtime.tokenizer.vocabSize,
      });
      const prompts = await Promise.all(
        req.prompts.map((p, i) => buildTextPrompt(p, runtime, req.prompts.length > 1 ? `prompt[${i}]` : 'prompt')),
      );
      // Structured output (vLLM's response_format / guided_* on completions): the whole completion is constrained.
      const constraint = req.outputFormat
        ? outputFormatConstraint({ format: req.outputFormat, endTokenIds: runtime.eosTokenIds, afterReasoningEnd: null })
        : null;
      const specs: SequenceSpec[] = [];
      const echoes: string[] = [];
      for (const prompt of prompts) {
        const maxTokens = resolveMaxTokens(prompt.tokens.length, req.maxTokens, runtime.maxSeqLen, null);
        for (let seq = 0; seq < req.n; seq++) {
          const job = withConstraint(engineJob(req, prompt.tokens, maxTokens, runtime, options.requestTimeoutSec, seq), constraint);
          const pipeline = new OutputPipeline({
            decoder: runtime.tokenizer,
            skipSpecialTokens: req.skipSpecialTokens,
            stop: req.stop,
            stopTokenIds: job.stopTokenIds,
            minTokens: job.minTokens,
            stages: [],
            // A completion continues the prompt's text: its first token is decoded after the prompt's last ones.
            context: prompt.tokens,
          });
          specs.push({ job, pipeline });
          echoes.push(req.echo ? prompt.text : '');
        }
      }
      const promptTokens = prompts.reduce((sum, p) => sum + p.tokens.length, 0);
      const meta = newResponseMeta('cmpl', options.modelName);
      const tokenBytes = (id: number): Uint8Array => runtime.tokenizer.tokenBytes(id);
      const steps = runSequences(runtime, specs, promptTokens, request, reply);

      if (req.stream) {
        const encoder = new CompletionChunkEncoder(meta, echoes, req.logprobs, req.includeUsage, tokenBytes);
        void streamSteps(new SseStream(reply), encoder, steps, request);
        return reply;
      }
      const builder = new CompletionBuilder(meta, echoes, req.logprobs, tokenBytes);
      for await (const { index, step } of steps) {
        const failed = generationError(step.done);
        if (failed) throw failed;
        builder.add(index, step.events, step.logprobs);
      }
      return builder.build(tokenUsage(request.generation!));
    },
  );
};
