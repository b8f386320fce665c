// Ajv (draft 2020-12, with ajv-formats' full formats) as the independent judge of schema conformance.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const ajv = new Ajv2020({ strict: false });
addFormats.default(ajv);

/** A validator for `schema`: null when the value is valid, else Ajv's error text. */
export function validator(schema: unknown): (value: unknown) => string | null {
  const validate = ajv.compile(schema as object);
  return (value) => (validate(value) ? null : ajv.errorsText(validate.errors));
}
