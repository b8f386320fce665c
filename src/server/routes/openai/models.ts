// GET /v1/models: exactly one record, the served model (one model per process).
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../../common/api-error.js';
import type { RouteDeps } from '../../app.js';

export const modelsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options }) => {
  // Creation time of the record: when this server started serving.
  const created = Math.floor(Date.now() / 1000);
  // max_model_len as vLLM reports it, so clients can size their prompts.
  const record = (maxModelLen: number) => ({
    id: options.modelName,
    object: 'model',
    created,
    owned_by: 'svc',
    max_model_len: maxModelLen,
  });

  app.get('/models', { config: { needsModel: true } }, async (request) => ({ object: 'list', data: [record(request.runtime!.maxSeqLen)] }));

  // OpenAI's retrieve: the served model under its name; any other name is not served here.
  app.get<{ Params: { model: string } }>('/models/:model', { config: { needsModel: true } }, async (request) => {
    if (request.params.model !== options.modelName) {
      throw new ApiError(404, `The model '${request.params.model}' does not exist; this server serves '${options.modelName}'.`, {
        code: 'model_not_found',
        param: 'model',
      });
    }
    return record(request.runtime!.maxSeqLen);
  });
};
