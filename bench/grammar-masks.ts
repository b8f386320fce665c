// Token-mask cost of structured outputs on a real vocabulary: feeds a realistic output token by
// token through a compiled grammar and times allowedTokens at every step, the first time (a cache
// miss unless an earlier step had the same top frame) and again (cached), then a second request
// with the same grammar (everything warm). Prints one table.
//
//   npx tsc -p tsconfig.json && node dist/bench/grammar-masks.js [--model DIR]
//
// DIR: a model directory with tokenizer.json (default ../shared/models/svc-tiny-chat, Qwen's 151k
// vocabulary).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileGrammar, jsonValue, VocabIndex, type ToolGrammar } from '../src/engine/grammar/index.js';
import { END, seq } from '../src/engine/grammar/ir.js';
import { tokenByteStrings } from '../src/engine/grammar/token-bytes.js';
import { loadTokenizer, type Tokenizer } from '../src/model/tokenizer.js';

const CUSTOMER = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: 'string', format: 'uuid' },
    first_name: { type: 'string', minLength: 1, maxLength: 40 },
    last_name: { type: 'string', minLength: 1, maxLength: 40 },
    email: { type: 'string', format: 'email' },
    phone: { type: 'string', pattern: '^\\+?[0-9 ()-]{7,20}$' },
    birth_date: { type: 'string', format: 'date' },
    created_at: { type: 'string', format: 'date-time' },
    age: { type: 'integer', minimum: 0, maximum: 130 },
    tier: { type: 'string', enum: ['free', 'basic', 'pro', 'enterprise'] },
    balance: { type: 'number', minimum: -10000, maximum: 1000000 },
    credit_limit: { type: ['number', 'null'] },
    active: { type: 'boolean' },
    verified: { type: 'boolean' },
    country: { type: 'string', pattern: '^[A-Z]{2}$' },
    city: { type: 'string', maxLength: 60 },
    street: { type: 'string', maxLength: 120 },
    postal_code: { type: 'string', pattern: '^[0-9A-Z -]{3,10}$' },
    language: { type: 'string', enum: ['en', 'de', 'fr', 'es', 'ja', 'zh'] },
    timezone: { type: 'string' },
    tags: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 8 },
    orders: { type: 'integer', minimum: 0 },
    last_order: { type: ['string', 'null'], format: 'date' },
    score: { type: 'number', minimum: 0, maximum: 1 },
    referrer: { type: ['string', 'null'] },
    notes: { type: 'string', maxLength: 500 },
    newsletter: { type: 'boolean' },
    support_level: { type: 'integer', minimum: 1, maximum: 5 },
    website: { type: ['string', 'null'], format: 'uri' },
    company: { type: ['string', 'null'], maxLength: 80 },
    status: { type: 'string', enum: ['lead', 'customer', 'churned'] },
  },
} as const;
const REQUIRED = Object.keys(CUSTOMER.properties);

const CUSTOMER_OUTPUT = {
  id: '3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f809a1b',
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada.lovelace@example.org',
  phone: '+44 20 7946 0958',
  birth_date: '1985-12-10',
  created_at: '2023-04-01T09:30:00Z',
  age: 38,
  tier: 'pro',
  balance: 1520.75,
  credit_limit: null,
  active: true,
  verified: false,
  country: 'GB',
  city: 'London',
  street: '12 St James Square',
  postal_code: 'SW1Y 4LB',
  language: 'en',
  timezone: 'Europe/London',
  tags: ['analytics', 'early-adopter', 'math'],
  orders: 17,
  last_order: '2024-02-29',
  score: 0.87,
  referrer: 'conference',
  notes: 'Prefers email contact. Interested in the analytical engine roadmap; asked about bulk pricing for her team.',
  newsletter: true,
  support_level: 3,
  website: 'https://example.org/ada',
  company: 'Analytical Engines Ltd',
  status: 'customer',
};

const OBJECT_OUTPUT = {
  title: 'Quarterly report',
  summary: 'Revenue grew 12% quarter over quarter, driven by the new subscription tier.',
  metrics: { revenue: 1250000.5, growth: 0.12, customers: 4821, churn: 0.031 },
  highlights: ['New pricing launched', 'Two enterprise deals closed', 'Support backlog halved'],
  risks: [
    { name: 'supplier delay', likelihood: 'medium', impact: 3 },
    { name: 'currency', likelihood: 'low', impact: 2 },
  ],
  approved: true,
  reviewer: null,
};

interface Row {
  label: string;
  tokens: number;
  firstMean: number;
  firstP95: number;
  firstMax: number;
  cachedMean: number;
  warmMean: number;
  compileMs: number;
}

function median(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function measure(label: string, schema: unknown, output: unknown, tk: Tokenizer, bytes: (Uint8Array | null)[], endId: number): Row {
  // A fresh index per scenario: the first visit to a shared node is a real cache miss.
  const vocab = new VocabIndex(bytes);
  const mask = new Uint8Array(vocab.size);
  let t = performance.now();
  const g = compileGrammar({ root: seq([jsonValue(schema), END]), endTokenIds: [endId] }, vocab)!;
  const compileMs = performance.now() - t;
  const ids = tk.encode(JSON.stringify(output, null, 2));
  const first: number[] = [];
  const cached: number[] = [];
  const walk = (grammar: ToolGrammar, record: boolean): number[] => {
    const warm: number[] = [];
    let st = grammar.start();
    for (let i = 0; i <= ids.length; i++) {
      t = performance.now();
      grammar.allowedTokens(st, mask);
      const ms = performance.now() - t;
      if (record) {
        first.push(ms);
        t = performance.now();
        grammar.allowedTokens(st, mask);
        cached.push(performance.now() - t);
      } else {
        warm.push(ms);
      }
      if (i < ids.length) {
        if (mask[ids[i]] !== 1) throw new Error(`${label}: token ${i} (${JSON.stringify(tk.decode([ids[i]]))}) is masked`);
        st = grammar.advance(st, ids[i]);
      } else if (mask[endId] !== 1) {
        throw new Error(`${label}: the output is not complete`);
      }
    }
    return warm;
  };
  walk(g, true);
  const warm = walk(g, false);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    label,
    tokens: ids.length + 1,
    firstMean: mean(first),
    firstP95: median(first, 0.95),
    firstMax: Math.max(...first),
    cachedMean: mean(cached),
    warmMean: mean(warm),
    compileMs,
  };
}

function main(): void {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--model');
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const dir = at >= 0 ? resolve(argv[at + 1]) : resolve(repoRoot, '..', 'shared', 'models', 'svc-tiny-chat');
  const tk = loadTokenizer(dir);
  let t = performance.now();
  const bytes = tokenByteStrings(tk);
  const bytesMs = performance.now() - t;
  t = performance.now();
  const vocabSize = new VocabIndex(bytes).size;
  const trieMs = performance.now() - t;
  const endId = tk.tokenToId('<|im_end|>') ?? 0;

  // A throwaway run first, so that the table measures caches, not the JIT's first compiles.
  measure('warm-up', { type: 'object', properties: { a: { type: 'string', maxLength: 9 } } }, { a: 'x' }, tk, bytes, endId);
  const rows = [
    measure('json_object', { type: 'object' }, OBJECT_OUTPUT, tk, bytes, endId),
    measure('30-property schema', { ...CUSTOMER, required: REQUIRED }, CUSTOMER_OUTPUT, tk, bytes, endId),
  ];
  const f = (x: number) => x.toFixed(3).padStart(8);
  console.log(`vocabulary: ${vocabSize} tokens (${dir}); token bytes ${bytesMs.toFixed(0)} ms, trie ${trieMs.toFixed(0)} ms`);
  console.log(
    'mask time per token, ms (first = first request: cache misses where a top frame is new; cached = same state again; warm = a second request)',
  );
  console.log(
    `${'grammar'.padEnd(20)} ${'tokens'.padStart(6)} ${'compile'.padStart(8)} ${'first'.padStart(8)} ${'p95'.padStart(8)} ${'max'.padStart(8)} ${'cached'.padStart(8)} ${'warm'.padStart(8)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.label.padEnd(20)} ${String(r.tokens).padStart(6)} ${f(r.compileMs)} ${f(r.firstMean)} ${f(r.firstP95)} ${f(r.firstMax)} ${f(r.cachedMean)} ${f(r.warmMean)}`,
    );
  }
}

main();
