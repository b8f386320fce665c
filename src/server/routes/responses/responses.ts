// POST /v1/responses: the stored context (previous response chain or conversation) + input →
// ChatRequest → one engine sequence → output pipeline → output items → `response` body, or the
// Responses events over SSE. With `store` (default) the response is stored from the start and its
// items as each completes (a streamed tool call is there even if the client hangs up right after
// it); with `conversation` its input and output items are appended to the conversation.
// GET / DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items read the store only.
import type { FastifyPluginAsync } from 'fastify';
import type { IndexedStep } from '../../generate.js';
import { generationError, invalidParam } from '../../../common/api-error.js';
import {
  newId,
  normalizeInput,
  page,
  pageQuerySchema,
  parsePageQuery,
  type Item,
  type OutputItem,
  type RawPageQuery,
} from '../../../protocols/responses/items.js';
import {
  OutputItems,
  finishStatus,
  responseError,
  responseObject,
  responseUsage,
  type ResponseEcho,
  type ResponseMeta,
  type ResponseObject,
} from '../../../protocols/responses/output.js';
import { conversationId, decodeResponsesRequest, type ResponsesBody } from '../../../protocols/responses/request.js';
import { ResponseStreamEncoder } from '../../../protocols/responses/stream.js';
import type { RouteDeps } from '../../app.js';
import { routeChatPrompt } from '../../chat-prompt.js';
import { chatSequence, resolveMaxTokens, runSequences, tokenUsage } from '../../generate.js';
import { SseStream, streamSteps } from '../../sse.js';
import type { StoredConversation, StoredResponse } from '../../store.js';
import { responsesSchema } from './schema.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };

/** Counts the tokens of steps that produced reasoning and nothing else: the usage's reasoning_tokens. */
async function* countReasoning(steps: AsyncGenerator<IndexedStep>, counter: { reasoning: number }): AsyncGenerator<IndexedStep> {
  for await (const s of steps) {
    const events = s.step.events;
    if (events.some((e) => e.type === 'reasoning') && !events.some((e) => e.type === 'text' || e.type === 'tool_call_start')) {
      counter.reasoning += s.step.ids.length;
    }
    yield s;
  }
}

export const responsesRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options, chatOutput, store }) => {
  app.post<{ Body: ResponsesBody }>('/', { schema: { body: responsesSchema }, config: { needsModel: true } }, async (request, reply) => {
    const runtime = request.runtime!;
    const body = request.body;
    const input = normalizeInput(body.input ?? [], 'input');
    const convId = conversationId(body);
    const previousId = body.previous_response_id ?? null;
    if (convId !== null && previousId !== null) {
      throw invalidParam('previous_response_id', "'previous_response_id' and 'conversation' cannot be used together.");
    }
    let context: Item[] = [];
    let conversation: StoredConversation | null = null;
    if (previousId !== null) {
      const previous = store.response(previousId, 'previous_response_id');
      context = [...previous.context, ...previous.input, ...previous.response.output];
    } else if (convId !== null) {
      conversation = store.conversation(convId, 'conversation');
      context = [...conversation.items];
    }
    const decoded = decodeResponsesRequest(body, context, input, { ...options, model: runtime.samplingDefaults });
    const { toolChoice, tools } = decoded;
    for (const warning of decoded.warnings) request.log.warn(warning);
    // max_output_tokens is a ceiling (below): compaction reserves nothing for it. The store keeps the items as sent.
    const { chat, prompt } = await routeChatPrompt(decoded.chat, runtime, options, request, reply, null);
    const promptTokens = prompt.tokens.length;
    // max_output_tokens is a ceiling: the completion gets the smaller of it and the room left.
    const room = resolveMaxTokens(promptTokens, null, runtime.maxSeqLen, chat.tools.length > 0 ? options.toolMaxTokens : null);
    const maxTokens = Math.min(room, chat.maxTokens ?? room);
    const { job, pipeline } = chatSequence(chat, prompt, maxTokens, runtime, chatOutput, options.requestTimeoutSec);

    const meta: ResponseMeta = { id: newId('resp'), createdAt: Math.floor(Date.now() / 1000), model: options.modelName };
    const echo: ResponseEcho = {
      instructions: body.instructions ?? null,
      tools,
      tool_choice: toolChoice,
      parallel_tool_calls: chat.parallelToolCalls,
      temperature: chat.sampling.temperature,
      top_p: chat.sampling.topP,
      max_output_tokens: body.max_output_tokens ?? null,
      previous_response_id: previousId,
      conversation: convId === null ? null : { id: convId },
      store: body.store ?? true,
      metadata: body.metadata ?? {},
      reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      text: body.text ?? { format: { type: 'text' } },
      truncation: body.truncation ?? 'disabled',
      user: body.user ?? null,
    };
    const snapshot = (state: Parameters<typeof responseObject>[2]): ResponseObject =>
      responseObject(meta, echo, { ...state, output: structuredClone(state.output) });

    // Submitted first: a request the engine refuses (busy, too long) leaves no trace in the store.
    const sequences = runSequences(runtime, [{ job, pipeline }], promptTokens, request, reply);
    // Stored from the start, in progress; each item as it completes; the final object at the end.
    let record: StoredResponse | null = null;
    if (echo.store) {
      record = store.putResponse({ id: meta.id, context, input, response: snapshot({ status: 'in_progress', output: [], usage: null }) });
    }
    if (conversation) store.append(conversation, input);
    const onItemDone = (item: OutputItem): void => {
      if (record) store.append(record, [structuredClone(item)]);
      if (conversation) store.append(conversation, [structuredClone(item)]);
    };
    const items = new OutputItems(onItemDone);
    const counter = { reasoning: 0 };
    const steps = countReasoning(sequences, counter);
    let finished = false;
    const done = (response: ResponseObject): void => {
      finished = true;
      if (record !== null) record.response = structuredClone(response);
    };

    if (chat.stream) {
      const encoder = new ResponseStreamEncoder(items, {
        snapshot: (state) => snapshot({ ...state, output: items.items }),
        done,
        usage: (u) => (u === null ? null : responseUsage(u, counter.reasoning)),
      });
      void streamSteps(new SseStream(reply), encoder, steps, request).finally(() => {
        // The client went away before the end: what completed is stored; the response is cancelled.
        if (!finished && record !== null) record.response.status = 'cancelled';
      });
      return reply;
    }
    for await (const { step } of steps) {
      const failed = generationError(step.done);
      if (failed) {
        items.close();
        done(snapshot({ status: 'failed', output: items.items, usage: null, error: responseError(failed) }));
        throw failed;
      }
      items.push(step.events);
    }
    items.close();
    const { status, incompleteReason } = finishStatus(items.finishReason);
    const usage = responseUsage(tokenUsage(request.generation!), counter.reasoning);
    const response = snapshot({ status, output: items.items, usage, incompleteReason });
    done(response);
    return response;
  });

  app.get<{ Params: { id: string } }>(
    '/:id',
    { schema: { params: idParams } },
    async (request) => store.response(request.params.id).response,
  );

  app.delete<{ Params: { id: string } }>('/:id', { schema: { params: idParams } }, async (request) => {
    const { id } = store.response(request.params.id);
    store.delete(id);
    return { id, object: 'response.deleted', deleted: true };
  });

  app.get<{ Params: { id: string }; Querystring: RawPageQuery }>(
    '/:id/input_items',
    { schema: { params: idParams, querystring: pageQuerySchema } },
    async (request) => page(store.response(request.params.id).input, parsePageQuery(request.query)),
  );
};
