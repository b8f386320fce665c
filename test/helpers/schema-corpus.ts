// Real-world-style JSON schemas for structured-output tests, in the style of OpenAI's strict-mode
// examples and JSONSchemaBench: nested objects, arrays with bounds, enums, anyOf, recursive $defs,
// patterns, formats, bounded numbers and strings. Every output generated for them must validate
// with Ajv (2020-12 draft, ajv-formats).

export const E2E_SCHEMAS: Record<string, Record<string, unknown>> = {
  weather_report: {
    type: 'object',
    properties: {
      city: { type: 'string', maxLength: 40 },
      temperature_c: { type: 'number', minimum: -90, maximum: 60 },
      conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain', 'snow', 'fog'] },
      humidity: { type: 'integer', minimum: 0, maximum: 100 },
    },
    required: ['city', 'temperature_c', 'conditions', 'humidity'],
    additionalProperties: false,
  },
  contact: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 60 },
      email: { type: 'string', format: 'email' },
      phone: { anyOf: [{ type: 'string', pattern: '^\\+?[0-9]{7,15}$' }, { type: 'null' }] },
      tags: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 4 },
    },
    required: ['name', 'email', 'phone', 'tags'],
    additionalProperties: false,
  },
  calendar_event: {
    type: 'object',
    properties: {
      title: { type: 'string', maxLength: 80 },
      date: { type: 'string', format: 'date' },
      starts_at: { type: 'string', format: 'date-time' },
      attendees: {
        type: 'array',
        minItems: 1,
        maxItems: 3,
        items: {
          type: 'object',
          properties: { name: { type: 'string', maxLength: 40 }, rsvp: { type: 'boolean' } },
          required: ['name', 'rsvp'],
          additionalProperties: false,
        },
      },
    },
    required: ['title', 'date', 'starts_at', 'attendees'],
    additionalProperties: false,
  },
  order: {
    type: 'object',
    properties: {
      order_id: { type: 'string', pattern: '^ORD-[0-9]{6}$' },
      customer_id: { type: 'string', format: 'uuid' },
      items: {
        type: 'array',
        minItems: 1,
        maxItems: 3,
        items: {
          type: 'object',
          properties: {
            sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{3}$' },
            quantity: { type: 'integer', minimum: 1, maximum: 99 },
            unit_price: { type: 'number', minimum: 0, maximum: 10000 },
          },
          required: ['sku', 'quantity', 'unit_price'],
          additionalProperties: false,
        },
      },
      status: { type: 'string', enum: ['pending', 'paid', 'shipped'] },
    },
    required: ['order_id', 'customer_id', 'items', 'status'],
    additionalProperties: false,
  },
  math_reasoning: {
    type: 'object',
    properties: {
      steps: {
        type: 'array',
        maxItems: 3,
        items: {
          type: 'object',
          properties: { explanation: { type: 'string', maxLength: 80 }, output: { type: 'string', maxLength: 30 } },
          required: ['explanation', 'output'],
          additionalProperties: false,
        },
      },
      final_answer: { type: 'string', maxLength: 30 },
    },
    required: ['steps', 'final_answer'],
    additionalProperties: false,
  },
  ui_tree: {
    $defs: {
      node: {
        type: 'object',
        properties: {
          type: { type: 'string', enum: ['div', 'button', 'header', 'section', 'field'] },
          label: { type: 'string', maxLength: 24 },
          children: { type: 'array', maxItems: 2, items: { $ref: '#/$defs/node' } },
        },
        required: ['type', 'label', 'children'],
        additionalProperties: false,
      },
    },
    $ref: '#/$defs/node',
  },
  moderation: {
    type: 'object',
    properties: {
      is_violating: { type: 'boolean' },
      category: { anyOf: [{ type: 'string', enum: ['violence', 'sexual', 'self_harm'] }, { type: 'null' }] },
      explanation: { anyOf: [{ type: 'string', maxLength: 100 }, { type: 'null' }] },
    },
    required: ['is_violating', 'category', 'explanation'],
    additionalProperties: false,
  },
  product_listing: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 3, maxLength: 40 },
      price: { type: 'number', exclusiveMinimum: 0, maximum: 5000 },
      currency: { const: 'EUR' },
      rating: { type: 'integer', minimum: 1, maximum: 5 },
      dimensions: {
        type: 'object',
        properties: { width_cm: { type: 'number', minimum: 0, maximum: 500 }, height_cm: { type: 'number', minimum: 0, maximum: 500 } },
        required: ['width_cm', 'height_cm'],
        additionalProperties: false,
      },
      in_stock: { type: 'boolean' },
      notes: { type: 'string', maxLength: 40 },
    },
    required: ['name', 'price', 'currency', 'rating', 'dimensions', 'in_stock'],
    additionalProperties: false,
  },
  linked_list: {
    $defs: {
      item: {
        type: 'object',
        properties: {
          value: { type: 'integer', minimum: 0, maximum: 1000 },
          next: { anyOf: [{ $ref: '#/$defs/item' }, { type: 'null' }] },
        },
        required: ['value', 'next'],
        additionalProperties: false,
      },
    },
    $ref: '#/$defs/item',
  },
  server_config: {
    type: 'object',
    properties: {
      host: { type: 'string', pattern: '^[a-z][a-z0-9.-]{0,30}$' },
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      tls: { type: 'boolean' },
      log_level: { enum: ['debug', 'info', 'warn', 'error'] },
      upstreams: { type: 'array', maxItems: 3, items: { type: 'string', pattern: '^[a-z0-9-]{1,20}:[0-9]{2,5}$' } },
    },
    required: ['host', 'port', 'tls', 'log_level', 'upstreams'],
    additionalProperties: false,
  },
};
