// Real-world-style JSON schemas (OpenAI strict-mode examples, JSONSchemaBench-like API payloads)
// for conformance tests: every value the grammar lets through must validate with Ajv.

type Schema = Record<string, unknown>;

/** A 30-property record of mixed types (the mask-cost bench uses it too). */
export const THIRTY_PROPERTIES: Schema = (() => {
  const kinds: Schema[] = [
    { type: 'string', maxLength: 24 },
    { type: 'integer', minimum: 0, maximum: 1000 },
    { type: 'number', minimum: -5, maximum: 5 },
    { type: 'boolean' },
    { type: 'string', enum: ['low', 'medium', 'high'] },
    { type: ['string', 'null'] },
  ];
  const properties: Schema = {};
  for (let i = 0; i < 30; i++) properties[`field_${String(i).padStart(2, '0')}`] = kinds[i % kinds.length];
  return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
})();

export const SCHEMAS: [name: string, schema: Schema][] = [
  [
    'person',
    {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 40 },
        age: { type: 'integer', minimum: 0, maximum: 150 },
        email: { type: 'string', format: 'email' },
        tags: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 5 },
      },
      required: ['name', 'age'],
      additionalProperties: false,
    },
  ],
  [
    'address',
    {
      type: 'object',
      properties: {
        street: { type: 'string' },
        zip: { type: 'string', pattern: '^\\d{5}(-\\d{4})?$' },
        country: { enum: ['US', 'CA', 'MX'] },
        geo: {
          type: 'object',
          properties: { lat: { type: 'number', minimum: -90, maximum: 90 }, lon: { type: 'number', minimum: -180, maximum: 180 } },
          required: ['lat', 'lon'],
        },
      },
      required: ['zip', 'country'],
    },
  ],
  [
    'product',
    {
      type: 'object',
      properties: {
        sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
        price: { type: 'number', exclusiveMinimum: 0, maximum: 10000 },
        currency: { type: 'string', enum: ['USD', 'EUR', 'GBP'] },
        stock: { type: 'integer', minimum: 0 },
      },
      required: ['sku', 'price', 'currency'],
      additionalProperties: false,
    },
  ],
  [
    'event with formats',
    {
      type: 'object',
      properties: {
        id: { type: 'string', format: 'uuid' },
        day: { type: 'string', format: 'date' },
        starts: { type: 'string', format: 'date-time' },
        at: { type: 'string', format: 'time' },
        length: { type: 'string', format: 'duration' },
      },
      required: ['id', 'day', 'starts', 'at'],
    },
  ],
  [
    'network formats',
    {
      type: 'object',
      properties: {
        host: { type: 'string', format: 'hostname' },
        v4: { type: 'string', format: 'ipv4' },
        v6: { type: 'string', format: 'ipv6' },
        home: { type: 'string', format: 'uri' },
      },
      required: ['host', 'v4', 'v6', 'home'],
    },
  ],
  [
    'tree ($defs, recursive)',
    {
      $ref: '#/$defs/node',
      $defs: {
        node: {
          type: 'object',
          properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 3 } },
          required: ['value', 'children'],
          additionalProperties: false,
        },
      },
    },
  ],
  [
    'linked list (anyOf with null)',
    {
      type: 'object',
      properties: { head: { $ref: '#/$defs/list' } },
      required: ['head'],
      $defs: {
        list: {
          anyOf: [
            { type: 'null' },
            {
              type: 'object',
              properties: { value: { type: 'string', maxLength: 5 }, next: { $ref: '#/$defs/list' } },
              required: ['value', 'next'],
            },
          ],
        },
      },
    },
  ],
  ['thirty properties', THIRTY_PROPERTIES],
  ['anyOf of scalars', { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'integer', minimum: 1, maximum: 99 }, { type: 'null' }] }],
  [
    'oneOf of different types',
    {
      oneOf: [
        { type: 'array', items: { type: 'boolean' }, minItems: 1 },
        { type: 'object', properties: { k: { const: 1 } }, required: ['k'] },
      ],
    },
  ],
  [
    'tuple (prefixItems)',
    { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }, { type: 'boolean' }], items: false, minItems: 2 },
  ],
  ['mixed enum', { enum: [1, 'two', null, true, 3.5, { x: [1] }] }],
  ['const object', { const: { kind: 'fixed', n: [1, 2] } }],
  [
    'numeric bounds',
    {
      type: 'object',
      properties: {
        a: { type: 'number', minimum: -10.5, maximum: 20.25 },
        b: { type: 'integer', exclusiveMinimum: -3, exclusiveMaximum: 7 },
        c: { type: 'number', multipleOf: 1, minimum: 100 },
        d: { type: 'number', exclusiveMinimum: 0.5, exclusiveMaximum: 0.75 },
        e: { type: 'integer', maximum: -1000 },
      },
      required: ['a', 'b', 'c', 'd', 'e'],
    },
  ],
  ['bounded string', { type: 'string', minLength: 3, maxLength: 8 }],
  ['pattern and maxLength', { type: 'string', pattern: '^[a-z]+(-[a-z]+)*$', minLength: 4, maxLength: 12 }],
  [
    'nested arrays',
    {
      type: 'array',
      items: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, minItems: 1, maxItems: 3 },
      minItems: 2,
      maxItems: 4,
    },
  ],
  ['free object of integers', { type: 'object', additionalProperties: { type: 'integer' } }],
  [
    'properties and additionalProperties',
    {
      type: 'object',
      properties: { id: { type: 'integer' }, name: { type: 'string', maxLength: 10 } },
      required: ['id'],
      additionalProperties: { type: 'array', items: { type: 'boolean' }, maxItems: 2 },
    },
  ],
  [
    'allOf',
    {
      allOf: [
        { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] },
        { properties: { label: { type: 'string', maxLength: 6 } }, required: ['label'] },
      ],
    },
  ],
  [
    'definitions (draft-07 style)',
    {
      type: 'object',
      properties: { a: { $ref: '#/definitions/point' }, b: { $ref: '#/definitions/point' } },
      required: ['a'],
      definitions: { point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] } },
    },
  ],
  ['required key not listed', { type: 'object', properties: { a: { type: 'boolean' } }, required: ['a', 'b'] }],
  [
    'OpenAI strict mode',
    {
      type: 'object',
      properties: {
        steps: {
          type: 'array',
          items: {
            type: 'object',
            properties: { explanation: { type: 'string' }, output: { type: 'string' } },
            required: ['explanation', 'output'],
            additionalProperties: false,
          },
        },
        final_answer: { type: 'string' },
        confidence: { type: ['number', 'null'] },
      },
      required: ['steps', 'final_answer', 'confidence'],
      additionalProperties: false,
      strict: true,
    },
  ],
  [
    'deep nesting',
    {
      type: 'object',
      properties: {
        a: {
          type: 'object',
          properties: {
            b: {
              type: 'object',
              properties: { c: { type: 'object', properties: { d: { type: 'integer' } }, required: ['d'] } },
              required: ['c'],
            },
          },
          required: ['b'],
        },
      },
      required: ['a'],
    },
  ],
  ['array of enums', { type: 'array', items: { enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3, uniqueItems: false }],
  ['unanchored pattern', { type: 'string', pattern: 'foo', maxLength: 20 }],
  ['pattern with groups', { type: 'string', pattern: '^(red|green|blue)-(\\d+)$' }],
  ['big enum', { type: 'string', enum: Array.from({ length: 50 }, (_, i) => `option_${i}`) }],
  ['unicode pattern', { type: 'string', pattern: '^[\\u00C0-\\u017F]+$' }],
  ['long string', { type: 'string', maxLength: 1000 }],
  [
    'string escapes in enums and patterns',
    { anyOf: [{ enum: ['a"b', 'c\\d', 'e\nf'] }, { type: 'string', pattern: '^[\\\\"\\n\\t]{2}$' }] },
  ],
];

/**
 * Schemas for the end-to-end tests with svc-tiny-chat: strings bounded so a small model at
 * temperature 1.0 finishes within its token budget.
 */
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
      email: { type: 'string', format: 'email', maxLength: 40 },
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
