// Random JSON schemas for property tests: types, bounds, patterns, formats, enums, objects, arrays,
// prefixItems, allOf, $refs and anyOf (over alternatives the grammar unions exactly: scalars and at
// most one object and one array). Some are unsatisfiable on purpose.
import type { Rng } from '../../src/engine/sampler.js';

type Schema = Record<string, unknown>;

export const RANDOM_DEFS: Schema = {
  s: { type: 'string', maxLength: 5 },
  n: { type: 'integer', minimum: 0, maximum: 50 },
  o: { type: 'object', properties: { v: { $ref: '#/$defs/o' }, w: { type: 'integer' } }, required: ['w'] },
};

export function randomSchema(rng: Rng, depth = 0): Schema {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rng.next() * a.length)];
  const chance = (p: number) => rng.next() < p;
  const num = () => pick([0, 1, -1, 2.5, -3.25, 10, 100, 0.1, 7, -100, 1000.5]);
  const scalar = () => randomScalar(rng, pick, chance, num);
  const s: Schema = {};
  const kinds = ['scalar', 'scalar', 'object', 'array', 'anyOf', 'allOf', 'ref', 'none'] as const;
  const kind = depth > 3 ? 'scalar' : pick(kinds);
  switch (kind) {
    case 'scalar':
      return scalar();
    case 'object':
      s.type = 'object';
      if (chance(0.8)) {
        const props: Schema = {};
        for (let i = Math.floor(rng.next() * 4); i > 0; i--) props[pick(['a', 'b', 'ab', 'c', 'key'])] = randomSchema(rng, depth + 1);
        s.properties = props;
      }
      if (chance(0.4)) s.required = [pick(['a', 'b', 'c'])];
      if (chance(0.4)) s.additionalProperties = chance(0.5) ? false : randomSchema(rng, depth + 1);
      return s;
    case 'array':
      s.type = 'array';
      if (chance(0.7)) s.items = randomSchema(rng, depth + 1);
      if (chance(0.3)) s.prefixItems = [randomSchema(rng, depth + 1), randomSchema(rng, depth + 1)];
      if (chance(0.3)) s.minItems = Math.floor(rng.next() * 3);
      if (chance(0.3)) s.maxItems = 1 + Math.floor(rng.next() * 3);
      return s;
    case 'anyOf': {
      const alts = [scalar(), scalar()];
      if (chance(0.5)) alts.push(randomSchema(rng, depth + 1));
      s.anyOf = alts;
      if (chance(0.3)) s.type = pick(['string', 'integer', 'object']);
      return s;
    }
    case 'allOf':
      return { allOf: [randomSchema(rng, depth + 1), randomSchema(rng, depth + 1)] };
    case 'ref':
      return { $ref: pick(['#/$defs/s', '#/$defs/n', '#/$defs/o']) };
    case 'none':
      return chance(0.5) ? { description: 'anything' } : {};
  }
}

function randomScalar(rng: Rng, pick: <T>(a: readonly T[]) => T, chance: (p: number) => boolean, num: () => number): Schema {
  const s: Schema = {};
  switch (pick(['string', 'integer', 'number', 'boolean', 'null', 'enum', 'const', 'multi'] as const)) {
    case 'string':
      s.type = 'string';
      if (chance(0.3)) s.minLength = Math.floor(rng.next() * 4);
      if (chance(0.3)) s.maxLength = 3 + Math.floor(rng.next() * 6);
      if (chance(0.3)) s.pattern = pick(['^a+b?$', 'x', '^[0-9]{2,3}$', '^(foo|bar)', 'z$', '^.{2}$', '[A-Z]']);
      else if (chance(0.2)) s.format = pick(['date', 'uuid', 'email', 'time', 'date-time', 'ipv4', 'hostname']);
      return s;
    case 'integer':
    case 'number':
      s.type = chance(0.5) ? 'integer' : 'number';
      if (chance(0.5)) s[pick(['minimum', 'exclusiveMinimum'])] = num();
      if (chance(0.5)) s[pick(['maximum', 'exclusiveMaximum'])] = num();
      return s;
    case 'boolean':
    case 'null':
      return { type: pick(['boolean', 'null']) };
    case 'enum':
      s.enum = Array.from({ length: 1 + Math.floor(rng.next() * 4) }, () => pick(['a', 'b"', 1, 2.5, null, true, 'ab', 12, -1]));
      if (chance(0.3)) s.type = pick(['string', 'integer', 'number']);
      return s;
    case 'const':
      return { const: pick(['x', 3, null, 'e\n']) };
    case 'multi':
      s.type = [pick(['string', 'integer']), pick(['null', 'boolean'])];
      if (chance(0.5)) s.maxLength = 4;
      if (chance(0.5)) s.minimum = 0;
      return s;
  }
}
