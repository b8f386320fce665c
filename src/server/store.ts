// The process's stored responses and conversations (the Responses API's state). One store per
// app, outside the model runtime, so it outlives model swaps. Bounded: at most `maxRecords`
// responses and conversations together (SVC_RESPONSES_STORE_MAX); past it the oldest record is
// evicted, and its id then answers 404 like an id never seen.
import { ApiError } from '../common/api-error.js';
import type { Item } from '../protocols/responses/items.js';
import type { ResponseObject } from '../protocols/responses/output.js';

export interface StoredResponse {
  kind: 'response';
  id: string;
  response: ResponseObject;
  /** The items before this response's input: its previous response's chain, or its conversation's items. */
  context: Item[];
  /** This request's input items. */
  input: Item[];
}

export interface StoredConversation {
  kind: 'conversation';
  id: string;
  createdAt: number;
  metadata: Record<string, string>;
  items: Item[];
}

type StoredRecord = StoredResponse | StoredConversation;

export const DEFAULT_STORE_MAX = 10_000;

export class RecordStore {
  /** In insertion order: the first is the oldest. */
  private readonly records = new Map<string, StoredRecord>();

  constructor(readonly maxRecords: number = DEFAULT_STORE_MAX) {}

  get size(): number {
    return this.records.size;
  }

  putResponse(record: Omit<StoredResponse, 'kind'>): StoredResponse {
    return this.put({ kind: 'response', ...record });
  }

  putConversation(record: Omit<StoredConversation, 'kind'>): StoredConversation {
    return this.put({ kind: 'conversation', ...record });
  }

  /** The stored response, or 404. */
  response(id: string, param = 'response_id'): StoredResponse {
    const r = this.records.get(id);
    if (r?.kind !== 'response') throw notFound('response', id, param);
    return r;
  }

  /** The conversation, or 404. */
  conversation(id: string, param = 'conversation_id'): StoredConversation {
    const r = this.records.get(id);
    if (r?.kind !== 'conversation') throw notFound('conversation', id, param);
    return r;
  }

  hasResponse(id: string): boolean {
    return this.records.get(id)?.kind === 'response';
  }

  delete(id: string): boolean {
    return this.records.delete(id);
  }

  private put<R extends StoredRecord>(record: R): R {
    this.records.delete(record.id);
    this.records.set(record.id, record);
    while (this.records.size > this.maxRecords) {
      const oldest = this.records.keys().next().value as string;
      this.records.delete(oldest);
    }
    return record;
  }
}

/** 404 for an id that is unknown, deleted or evicted. */
export function notFound(what: 'response' | 'conversation' | 'item', id: string, param: string): ApiError {
  return new ApiError(
    404,
    `No ${what} with id '${id}' found: it never existed, was deleted, or was evicted from the store (it keeps the newest SVC_RESPONSES_STORE_MAX records).`,
    { code: 'not_found', param },
  );
}
