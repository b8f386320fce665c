// The process's stored responses and conversations (the Responses API's state). One store per
// app, outside the model runtime, so it outlives model swaps. Bounded: at most `maxRecords`
// responses and conversations together (SVC_RESPONSES_STORE_MAX) and about `maxBytes` of their
// items as JSON (SVC_RESPONSES_STORE_MAX_BYTES); past either the least recently written record is
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
export const DEFAULT_STORE_MAX_BYTES = 1 << 30;

/** What items cost in the store: their JSON size (a context, shared with the records it came from, costs a pointer an item). */
export function itemBytes(items: readonly unknown[]): number {
  let bytes = 0;
  for (const item of items) bytes += Buffer.byteLength(JSON.stringify(item));
  return bytes;
}

export class RecordStore {
  /** In insertion order: the first is the oldest. */
  private readonly records = new Map<string, StoredRecord>();
  /** Each record's cost (itemBytes), and their sum. */
  private readonly costs = new Map<string, number>();
  private bytes = 0;

  constructor(
    readonly maxRecords: number = DEFAULT_STORE_MAX,
    readonly maxBytes: number = DEFAULT_STORE_MAX_BYTES,
  ) {}

  get size(): number {
    return this.records.size;
  }

  putResponse(record: Omit<StoredResponse, 'kind'>): StoredResponse {
    return this.put({ kind: 'response', ...record }, itemBytes(record.input) + 8 * record.context.length);
  }

  putConversation(record: Omit<StoredConversation, 'kind'>): StoredConversation {
    return this.put({ kind: 'conversation', ...record }, itemBytes(record.items));
  }

  /** Items appended to a stored response's output or a conversation: counted, and the record becomes the newest. */
  append(record: StoredRecord, items: readonly Item[]): void {
    const list = record.kind === 'response' ? record.response.output : record.items;
    list.push(...(items as never[]));
    if (!this.records.has(record.id)) return; // deleted or evicted meanwhile: nothing to count
    this.put(record, (this.costs.get(record.id) ?? 0) + itemBytes(items));
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
    this.bytes -= this.costs.get(id) ?? 0;
    this.costs.delete(id);
    return this.records.delete(id);
  }

  /** Stores (or re-stores) `record` as the newest, at `cost`; evicts the oldest while over a bound (the newest stays). */
  private put<R extends StoredRecord>(record: R, cost: number): R {
    this.delete(record.id);
    this.records.set(record.id, record);
    this.costs.set(record.id, cost);
    this.bytes += cost;
    while (this.records.size > this.maxRecords || (this.bytes > this.maxBytes && this.records.size > 1)) {
      this.delete(this.records.keys().next().value as string);
    }
    return record;
  }
}

/** 404 for an id that is unknown, deleted or evicted. */
export function notFound(what: 'response' | 'conversation' | 'item', id: string, param: string): ApiError {
  return new ApiError(
    404,
    `No ${what} with id '${id}' found: it never existed, was deleted, or was evicted from the store (it keeps the newest SVC_RESPONSES_STORE_MAX records, SVC_RESPONSES_STORE_MAX_BYTES of items).`,
    { code: 'not_found', param },
  );
}
