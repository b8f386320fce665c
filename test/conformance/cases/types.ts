// Shape of a tool-call parser conformance case: model output in, content and calls out.

import type { ToolSchema } from '../../../src/chat/tool-formats/registry.js';

export interface ExpectedCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ParserCase {
  name: string;
  /** The model's output text. */
  input: string;
  /** All text events joined. */
  content: string;
  calls: ExpectedCall[];
  /** Tool schemas for formats that type values by schema (default: TOOLS). */
  tools?: ToolSchema[];
}

/** Tools the cases call; the schemas exercise every value type the XML formats convert. */
export const TOOLS: ToolSchema[] = [
  {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'integer' },
        unit: { type: 'string', enum: ['c', 'f'] },
        hourly: { type: 'boolean' },
      },
      required: ['city'],
    },
  },
  {
    name: 'search',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        limit: { type: ['integer', 'null'] },
        score: { type: 'number' },
        filters: { type: 'object' },
        tags: { type: 'array', items: { type: 'string' } },
      },
    },
  },
  { name: 'write_file', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } } },
  { name: 'now', parameters: { type: 'object', properties: {} } },
];
