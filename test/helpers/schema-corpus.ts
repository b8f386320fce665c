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
