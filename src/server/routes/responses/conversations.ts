// /v1/conversations: create (items, metadata), retrieve, update metadata, delete, and its items
// (list with cursor pagination, add, retrieve, delete), in OpenAI's shapes. Store only: these
// routes never need the model, and keep answering while none is loaded.
import type { FastifyPluginAsync } from 'fastify';
import {
  newId,
  normalizeInput,
  page,
  pageQuerySchema,
  parsePageQuery,
  type RawPageQuery,
  type WireInputItem,
} from '../../../protocols/responses/items.js';
import type { RouteDeps } from '../../app.js';
import { notFound, type StoredConversation } from '../../store.js';
import { conversationCreateSchema, conversationUpdateSchema, itemsCreateSchema } from './schema.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
const itemParams = {
  type: 'object',
  required: ['id', 'item_id'],
  properties: { id: { type: 'string' }, item_id: { type: 'string' } },
};

type Metadata = Record<string, string>;

function conversationObject(c: StoredConversation) {
  return { id: c.id, object: 'conversation', created_at: c.createdAt, metadata: c.metadata };
}

export const conversationsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { store }) => {
  app.post<{ Body: { items?: WireInputItem[] | null; metadata?: Metadata | null } | null }>(
    '/',
    { schema: { body: conversationCreateSchema } },
    async (request) => {
      const items = normalizeInput(request.body?.items ?? [], 'items');
      const c = store.putConversation({
        id: newId('conv'),
        createdAt: Math.floor(Date.now() / 1000),
        metadata: request.body?.metadata ?? {},
        items,
      });
      return conversationObject(c);
    },
  );

  app.get<{ Params: { id: string } }>('/:id', { schema: { params: idParams } }, async (request) =>
    conversationObject(store.conversation(request.params.id)),
  );

  app.post<{ Params: { id: string }; Body: { metadata: Metadata | null } }>(
    '/:id',
    { schema: { params: idParams, body: conversationUpdateSchema } },
    async (request) => {
      const c = store.conversation(request.params.id);
      c.metadata = request.body.metadata ?? {};
      return conversationObject(c);
    },
  );

  app.delete<{ Params: { id: string } }>('/:id', { schema: { params: idParams } }, async (request) => {
    const { id } = store.conversation(request.params.id);
    store.delete(id);
    return { id, object: 'conversation.deleted', deleted: true };
  });

  app.get<{ Params: { id: string }; Querystring: RawPageQuery }>(
    '/:id/items',
    { schema: { params: idParams, querystring: pageQuerySchema } },
    async (request) => page(store.conversation(request.params.id).items, parsePageQuery(request.query)),
  );

  app.post<{ Params: { id: string }; Body: { items: WireInputItem[] } }>(
    '/:id/items',
    { schema: { params: idParams, body: itemsCreateSchema } },
    async (request) => {
      const c = store.conversation(request.params.id);
      const items = normalizeInput(request.body.items, 'items');
      store.append(c, items);
      return { object: 'list', data: items, first_id: items[0]?.id ?? null, last_id: items[items.length - 1]?.id ?? null, has_more: false };
    },
  );

  app.get<{ Params: { id: string; item_id: string } }>('/:id/items/:item_id', { schema: { params: itemParams } }, async (request) => {
    const item = store.conversation(request.params.id).items.find((i) => i.id === request.params.item_id);
    if (item === undefined) throw notFound('item', request.params.item_id, 'item_id');
    return item;
  });

  app.delete<{ Params: { id: string; item_id: string } }>('/:id/items/:item_id', { schema: { params: itemParams } }, async (request) => {
    const c = store.conversation(request.params.id);
    const at = c.items.findIndex((i) => i.id === request.params.item_id);
    if (at < 0) throw notFound('item', request.params.item_id, 'item_id');
    c.items.splice(at, 1);
    return conversationObject(c);
  });
};
