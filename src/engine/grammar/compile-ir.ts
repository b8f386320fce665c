// A grammar's data form (ir.ts) → the matcher's node graph (nodes.ts), in the engine worker.
// A subtree used twice (one call shared by every repetition, a close shared by two branches)
// becomes one node, as when the formats built nodes directly: every use keeps its own progress in
// its frames. Node constructors throw GrammarError where the grammar cannot be built (literals that
// prefix each other, a required parameter the format cannot spell).

import { gemmaArgsNode, pythonKwargsNode } from './call-args.js';
import { GrammarError, SchemaError } from './errors.js';
import { gbnfMachine } from './gbnf.js';
import type { GrammarIR } from './ir.js';
import { jsonValueNode, parametersNode } from './json-schema-grammar.js';
import { MarkerDfa } from './literals.js';
import {
  alt,
  altSet,
  cfgNode,
  END,
  EOS,
  JSON_GAP,
  jsonArray,
  lit,
  literalSwitch,
  opened,
  seq,
  TAG_GAP,
  until,
  type GNode,
} from './nodes.js';
import { regexMachine } from './regex.js';
import { bounded } from './repeat.js';
import { xmlParamsNode } from './xml-values.js';

/**
 * The node graph for `root`; throws GrammarError when it cannot be built (SchemaError when the
 * user's schema, regex or grammar is at fault).
 */
export function compileIR(root: GrammarIR): GNode {
  try {
    return new IrCompiler().node(root, null);
  } catch (err) {
    // Schemas, patterns and grammars are compiled recursively: one nested past the stack is the user's.
    if (err instanceof RangeError && /call stack/i.test(err.message)) throw new SchemaError('the constraint is nested too deeply');
    throw err;
  }
}

/** Constraints checkConstraint found valid lately (by their JSON), so a client that repeats one is not compiled again. */
const checked = new Set<string>();
const KEEP_CHECKED = 64;

/**
 * Compiles `root` to check it, for the main thread at request time: throws SchemaError (answer
 * 400) when the user's schema, regex or grammar is wrong or unsupported. Any other GrammarError (a
 * tool a format cannot spell) is not the user's to fix and is left to the worker, which then
 * decodes unconstrained — unless `strict` (a structured output, which has no unconstrained
 * fallback), when it is thrown too.
 */
export function checkConstraint(root: GrammarIR, strict = false): void {
  let key: string;
  try {
    key = JSON.stringify(root);
  } catch {
    throw new SchemaError('the constraint is nested too deeply');
  }
  if (checked.has(key)) return;
  try {
    compileIR(root);
  } catch (err) {
    if (strict || err instanceof SchemaError || !(err instanceof GrammarError)) throw err;
    return; // not remembered: only constraints that compile are
  }
  if (checked.size >= KEEP_CHECKED) checked.delete(checked.values().next().value!);
  checked.add(key);
}

class IrCompiler {
  /** Nodes built so far, by IR subtree (only subtrees that do not depend on a repetition's `again`). */
  private readonly built = new Map<GrammarIR, GNode>();
  private readonly holdsAgain = new Map<GrammarIR, boolean>();

  /** `again`: the node the innermost repetition's `again` stands for here. */
  node(ir: GrammarIR, again: GNode | null): GNode {
    const reusable = !this.dependsOnAgain(ir);
    const known = reusable ? this.built.get(ir) : undefined;
    if (known) return known;
    const n = this.build(ir, again);
    if (reusable) this.built.set(ir, n);
    return n;
  }

  private build(ir: GrammarIR, again: GNode | null): GNode {
    const kid = (x: GrammarIR) => this.node(x, again);
    switch (ir.kind) {
      case 'lit':
        return lit(ir.text);
      case 'gap':
        return ir.of === 'tag' ? TAG_GAP : JSON_GAP;
      case 'end':
        return END;
      case 'seq':
        return seq(ir.parts.map(kid));
      case 'switch':
        return literalSwitch(ir.literals, ir.then && ir.then.map((t) => (t === null ? null : kid(t))));
      case 'choice': {
        const n = alt();
        for (const [first, to] of ir.branches) altSet(n, first, kid(to));
        if (ir.eos) n.kids[EOS] = kid(ir.eos);
        return n;
      }
      case 'textUntil':
        return textUntil(ir.marker);
      case 'repeat':
        return bounded(ir.max, (next) => this.node(next === null ? ir.last : ir.more, next));
      case 'again':
        if (again === null) throw new GrammarError('grammar: `again` outside a repetition');
        return again;
      case 'jsonArray':
        return jsonArray(kid(ir.items), ir.min, ir.max);
      case 'opened':
        return opened(kid(ir.of));
      case 'args':
        return ir.syntax === 'gemma' ? gemmaArgsNode(ir.parameters) : parametersNode(ir.parameters);
      case 'json':
        return jsonValueNode(ir.schema);
      case 'regex':
        return cfgNode(regexMachine(ir.pattern, { mode: 'raw', anchored: true }));
      case 'gbnf':
        return cfgNode(gbnfMachine(ir.grammar));
      case 'pythonKwargs':
        return pythonKwargsNode(ir.parameters);
      case 'xmlParams': {
        const tags = new Map(ir.tags);
        const params = xmlParamsNode(ir.parameters, ir.style, (k) => tags.get(k) ?? null, ir.close);
        if (ir.valueOpen.length > 0) {
          const open = ir.valueOpen.map(kid);
          params.kids = params.kids.map((v) => (v === null ? null : seq([...open, v])));
        }
        return params;
      }
    }
  }

  /** Whether the subtree holds an `again` of an enclosing repetition (a repetition's own are bound inside it). */
  private dependsOnAgain(ir: GrammarIR): boolean {
    let v = this.holdsAgain.get(ir);
    if (v === undefined) {
      v = ir.kind === 'again' || kids(ir).some((k) => this.dependsOnAgain(k));
      this.holdsAgain.set(ir, v);
    }
    return v;
  }
}

function kids(ir: GrammarIR): GrammarIR[] {
  switch (ir.kind) {
    case 'seq':
      return ir.parts;
    case 'switch':
      return (ir.then ?? []).filter((t): t is GrammarIR => t !== null);
    case 'choice':
      return [...ir.branches.map(([, to]) => to), ...(ir.eos ? [ir.eos] : [])];
    case 'jsonArray':
      return [ir.items];
    case 'opened':
      return [ir.of];
    case 'xmlParams':
      return ir.valueOpen;
    default:
      return [];
  }
}

const textNodes = new Map<string, GNode>();

/** Free text up to `marker`; shared per marker so its (large) mask is computed once per vocabulary. */
function textUntil(marker: string): GNode {
  let node = textNodes.get(marker);
  if (!node) textNodes.set(marker, (node = until(new MarkerDfa([marker], []), true)));
  return node;
}
