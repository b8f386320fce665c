// JSON schemas of the Responses and Conversations bodies. Items are checked loosely here (types of
// the fields) and per type by the decoder (src/protocols/responses/items.ts), which names the field.

const part = { type: 'object', required: ['type'], properties: { type: { type: 'string' }, text: { type: 'string' } } };

export const inputItem = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    id: { type: 'string' },
    role: { type: 'string' },
    content: { anyOf: [{ type: 'string' }, { type: 'array', items: part }] },
    status: { type: 'string' },
    call_id: { type: 'string' },
    name: { type: 'string' },
    arguments: { type: 'string' },
    output: { anyOf: [{ type: 'string' }, { type: 'array', items: part }] },
    summary: { type: 'array', items: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } } },
    encrypted_content: { type: ['string', 'null'] },
  },
};

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

const tool = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    parameters: { type: ['object', 'null'] },
    strict: { type: ['boolean', 'null'] },
  },
};

const toolChoice = nullable({
  anyOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    { type: 'object', required: ['type'], properties: { type: { type: 'string' }, name: { type: 'string' } } },
  ],
});

const metadata = { type: ['object', 'null'], additionalProperties: { type: 'string', maxLength: 512 }, maxProperties: 16 };

export const responsesSchema = {
  type: 'object',
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: inputItem }] },
    instructions: { type: ['string', 'null'] },
    tools: { type: ['array', 'null'], items: tool },
    tool_choice: toolChoice,
    parallel_tool_calls: { type: ['boolean', 'null'] },
    max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
    temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
    top_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    previous_response_id: { type: ['string', 'null'] },
    conversation: nullable({
      anyOf: [{ type: 'string' }, { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }],
    }),
    conversation_id: { type: ['string', 'null'] },
    store: { type: ['boolean', 'null'] },
    stream: { type: ['boolean', 'null'] },
    reasoning: {
      type: ['object', 'null'],
      properties: {
        effort: { type: ['string', 'null'], enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', null] },
        summary: { type: ['string', 'null'] },
        generate_summary: { type: ['string', 'null'] },
      },
    },
    include: { type: ['array', 'null'], items: { type: 'string' } },
    metadata,
    text: {
      type: ['object', 'null'],
      properties: {
        format: {
          type: ['object', 'null'],
          required: ['type'],
          properties: {
            type: { type: 'string', enum: ['text', 'json_object', 'json_schema'] },
            name: { type: 'string' },
            description: { type: 'string' },
            schema: { anyOf: [{ type: 'object' }, { type: 'boolean' }] },
            strict: { type: ['boolean', 'null'] },
          },
        },
        verbosity: { type: ['string', 'null'], enum: ['low', 'medium', 'high', null] },
      },
    },
    truncation: { type: ['string', 'null'], enum: ['auto', 'disabled', null] },
    user: { type: ['string', 'null'] },
    background: { type: ['boolean', 'null'] },
  },
};

export const conversationCreateSchema = {
  type: ['object', 'null'],
  properties: { items: { type: ['array', 'null'], maxItems: 20, items: inputItem }, metadata },
};

export const conversationUpdateSchema = { type: 'object', required: ['metadata'], properties: { metadata } };

export const itemsCreateSchema = {
  type: 'object',
  required: ['items'],
  properties: { items: { type: 'array', maxItems: 20, items: inputItem } },
};
