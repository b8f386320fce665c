// The Responses API's items: what `input` holds, what `output` holds, and what conversations and
// `input_items` list. Items are kept in their wire shape (the store holds them as they are sent),
// each with an id: the client's when it gave one, else a new one with the type's prefix.
import { randomBytes } from 'node:crypto';
import { invalidParam } from '../../common/api-error.js';

/** `<prefix>_` and 48 hex digits, as OpenAI's response, item and conversation ids look. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

export interface InputTextPart {
  type: 'input_text';
  text: string;
}
export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs?: unknown[];
}
export interface ReasoningTextPart {
  type: 'reasoning_text';
  text: string;
}
/** Any content part as clients send it (input_image is decoded into an image part; input_file is refused by the decoder). */
export interface WirePart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface MessageItem {
  type: 'message';
  id: string;
  role: 'user' | 'assistant' | 'system' | 'developer';
  status: 'completed' | 'in_progress' | 'incomplete';
  content: WirePart[];
}
export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'completed' | 'in_progress' | 'incomplete';
}
export interface FunctionCallOutputItem {
  type: 'function_call_output';
  id: string;
  call_id: string;
  output: string | WirePart[];
  status: 'completed' | 'in_progress' | 'incomplete';
}
export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: { type: 'summary_text'; text: string }[];
  content?: ReasoningTextPart[];
  encrypted_content?: string | null;
  status?: 'completed' | 'in_progress' | 'incomplete';
}

export type Item = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem;
export type OutputItem = MessageItem | FunctionCallItem | ReasoningItem;

/** An input item as clients send it: an easy message `{role, content}` or a typed item. */
export interface WireInputItem {
  type?: string;
  id?: string;
  role?: string;
  content?: string | WirePart[];
  status?: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | WirePart[];
  summary?: { type: string; text: string }[];
  encrypted_content?: string | null;
}

const ROLES = ['user', 'assistant', 'system', 'developer'] as const;

/** Id prefixes by item type. */
const PREFIX: Record<Item['type'], string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
};

export function newItemId(type: Item['type']): string {
  return newId(PREFIX[type]);
}

/**
 * The client's input items in their stored shape, with ids: a message's string content becomes
 * one text part (input_text, or output_text for the assistant). Checks what the JSON schema cannot
 * (which fields each type needs); `at` is the field's path for errors.
 */
export function normalizeInput(input: string | WireInputItem[], at: string): Item[] {
  if (typeof input === 'string') {
    return [
      { type: 'message', id: newItemId('message'), role: 'user', status: 'completed', content: [{ type: 'input_text', text: input }] },
    ];
  }
  return input.map((item, i) => normalizeItem(item, `${at}.${i}`));
}

function normalizeItem(item: WireInputItem, at: string): Item {
  const type = item.type ?? 'message';
  const need = (field: keyof WireInputItem): void => {
    if (item[field] === undefined || item[field] === null) throw invalidParam(`${at}.${field}`, `${at}.${field}: Field required`);
  };
  switch (type) {
    case 'message': {
      need('role');
      need('content');
      const role = item.role as MessageItem['role'];
      if (!ROLES.includes(role)) {
        throw invalidParam(`${at}.role`, `${at}.role: '${item.role}' is not one of ${ROLES.join(', ')}.`);
      }
      const textType = role === 'assistant' ? 'output_text' : 'input_text';
      const content: WirePart[] =
        typeof item.content === 'string'
          ? [role === 'assistant' ? { type: textType, text: item.content, annotations: [] } : { type: textType, text: item.content }]
          : (item.content as WirePart[]);
      return { type: 'message', id: item.id ?? newItemId('message'), role, status: 'completed', content };
    }
    case 'function_call':
      need('call_id');
      need('name');
      need('arguments');
      return {
        type: 'function_call',
        id: item.id ?? newItemId('function_call'),
        call_id: item.call_id!,
        name: item.name!,
        arguments: item.arguments!,
        status: 'completed',
      };
    case 'function_call_output':
      need('call_id');
      need('output');
      return {
        type: 'function_call_output',
        id: item.id ?? newItemId('function_call_output'),
        call_id: item.call_id!,
        output: item.output!,
        status: 'completed',
      };
    case 'reasoning': {
      const out: ReasoningItem = {
        type: 'reasoning',
        id: item.id ?? newItemId('reasoning'),
        summary: (item.summary ?? []).map((s) => ({ type: 'summary_text', text: s.text })),
      };
      if (Array.isArray(item.content)) out.content = item.content.map((p) => ({ type: 'reasoning_text', text: p.text ?? '' }));
      if (item.encrypted_content !== undefined) out.encrypted_content = item.encrypted_content;
      return out;
    }
    default:
      throw invalidParam(`${at}.type`, `${at}.type: '${type}' is not an input item type this server accepts.`);
  }
}

/** A list page in OpenAI's shape. */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface PageQuery {
  after?: string;
  limit?: number;
  order?: 'asc' | 'desc';
}

/**
 * One page of `items` (oldest first) by OpenAI's cursor rules: `order` (default desc), the items
 * after the one with id `after` in that order, at most `limit` (default 20). An unknown `after`
 * is a 400.
 */
export function page<T extends { id: string }>(items: readonly T[], query: PageQuery, defaultOrder: 'asc' | 'desc' = 'desc'): ListPage<T> {
  const ordered = (query.order ?? defaultOrder) === 'asc' ? [...items] : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    if (at < 0) throw invalidParam('after', `after: no item with id '${query.after}' in this list.`);
    start = at + 1;
  }
  const limit = query.limit ?? 20;
  const data = ordered.slice(start, start + limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}

/** The pagination query as sent (query strings are text; the app does not coerce types). */
export interface RawPageQuery {
  after?: string;
  limit?: string;
  order?: string;
}

/** The schema of the pagination query: after, limit (digits), order asc / desc; `include` accepted. */
export const pageQuerySchema = {
  type: 'object',
  properties: {
    after: { type: 'string' },
    limit: { type: 'string', pattern: '^[0-9]+$' },
    order: { type: 'string', enum: ['asc', 'desc'] },
  },
};

/** The checked query: limit from 1 to 100. */
export function parsePageQuery(raw: RawPageQuery): PageQuery {
  const query: PageQuery = {};
  if (raw.after !== undefined) query.after = raw.after;
  if (raw.order === 'asc' || raw.order === 'desc') query.order = raw.order;
  if (raw.limit !== undefined) {
    const limit = Number(raw.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalidParam('limit', `limit: expected an integer from 1 to 100, got '${raw.limit}'.`);
    }
    query.limit = limit;
  }
  return query;
}
