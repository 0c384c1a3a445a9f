/**
 * Two-variable comprehensions (cel-go `ext.TwoVarComprehensions`, enabled in Kubernetes since
 * 1.32): `all`, `exists`, `existsOne` / `exists_one` with (index, value) on lists and (key,
 * value) on maps, and `transformList`, `transformMap`, `transformMapEntry` with an optional
 * filter. cel-js has one-variable comprehensions only, so these are macros of their own (a
 * type-check and an evaluate, as cel-js lets a library declare with `ast` parameters), following
 * cel-go's expansion step by step: the same results, the same error when several steps fail
 * (`all`/`exists` keep the first, `existsOne` and a filter the last), the same messages
 * (`insert failed: key x already exists`, `unsupported comprehension range type: types.Int`,
 * `duplicate variable name: i`, ...).
 *
 * Cost: each iteration is charged as cel-go's runtime cost tracker charges the expansion (loop
 * condition, accumulator reads, list/map building, the step's own expressions), through
 * cost/meter.ts's `charge`; the step's expressions are instrumented with cost/instrument.ts's `instrument` (their
 * static cost, and the size-scaled calls and nested comprehensions inside them). The macro keeps
 * them out of cost/instrument.ts's own walk (which charges a macro's pieces once): only the range is exposed
 * to it, charged once as in cel-go. In a team's AdmissionPolicy (`strict`, set by cost/instrument.ts),
 * the step's expressions are instrumented as strictly, and building a map costs more per entry.
 */
import { ParseError, type Environment } from '@marcbachmann/cel-js';
import { charge } from '../cost/meter.ts';
import { instrument } from '../cost/instrument.ts';
import { celEquals, celError, goTypeName, typeName, UnsignedInt } from '../celjs/values.ts';
import { celGoType } from '../celjs/static-types.ts';
import type { Checker, Evaluator, Node, Scope, TypeDecl } from '../celjs/types.ts';

type Kind = 'all' | 'exists' | 'existsOne' | 'transformList' | 'transformMap' | 'transformMapEntry';

/** What the macro keeps away from cost/instrument.ts's walk of macro objects (a plain object: it only counts nodes). */
interface Parts {
  kind: Kind;
  var1: string;
  var2: string;
  filter: Node | undefined;
  expr: Node;
  /** How to turn the keys of a plain-object range back into the map's static key type (cel-js keeps `{1: 'a'}` as `{'1': 'a'}`). */
  keyOf: ((key: string) => unknown) | undefined;
  /** The same for the maps transformMapEntry's expression yields. */
  entryKeyOf: ((key: string) => unknown) | undefined;
  scope1: Scope | undefined;
  scope2: Scope | undefined;
  /** Static costs of `filter` and `expr`, measured (and their inner calls instrumented) on first evaluation. */
  costs: { filter: number; expr: number } | undefined;
  /** Set by cost/instrument.ts in a team's policy: `filter` and `expr` are instrumented as strictly as the rest. */
  strict?: boolean;
}

interface TwoVarMacro {
  /** The range: the one piece cost/instrument.ts sees, and charges once per evaluation. */
  receiver: Node;
  parts: Parts;
  async: false;
  typeCheck(checker: Checker, m: TwoVarMacro, ctx: Scope): TypeDecl;
  evaluate(ev: Evaluator, m: TwoVarMacro, ctx: unknown): unknown;
}

/** cel-go's accumulator names, which iteration variables may not take. */
const ACCUMULATORS = new Set(['__result__', '@result']);

function iterVar(node: Node): string {
  if (node.op !== 'id' || typeof node.args !== 'string') throw new ParseError('argument must be a simple name', node as never);
  return node.args;
}

function expand(kind: Kind, arity: 3 | 4) {
  return ({ args, receiver }: { args: Node[]; receiver: Node }): TwoVarMacro => {
    const var1 = iterVar(args[0]!);
    const var2 = iterVar(args[1]!);
    if (var1 === var2) throw new ParseError(`duplicate variable name: ${var1}`, args[1] as never);
    if (ACCUMULATORS.has(var1)) throw new ParseError('iteration variable overwrites accumulator variable', args[0] as never);
    if (ACCUMULATORS.has(var2)) throw new ParseError('iteration variable overwrites accumulator variable', args[1] as never);
    const parts: Parts = {
      kind,
      var1,
      var2,
      filter: arity === 4 ? args[2] : undefined,
      expr: args[arity - 1]!,
      keyOf: undefined,
      entryKeyOf: undefined,
      scope1: undefined,
      scope2: undefined,
      costs: undefined,
    };
    return { receiver, parts, async: false, typeCheck, evaluate };
  };
}

// ---------------------------------------------------------------------------------------------
// Type checking

const TO_DYN = new Map([
  ['A', 'dyn'],
  ['T', 'dyn'],
  ['K', 'dyn'],
  ['V', 'dyn'],
]);

/** `t` with its type parameters (the element type of `[]`, ...) as dyn. */
function concrete(checker: Checker, t: TypeDecl | undefined): TypeDecl {
  if (!t || t.kind === 'param') return checker.getType('dyn');
  return t.hasPlaceholderType ? t.templated(checker.registry, TO_DYN) : t;
}

const goType = (checker: Checker, t: TypeDecl) => celGoType(checker.formatType(t));
const isBool = (t: TypeDecl) => t.kind === 'dyn' || t.name === 'bool';

function keyParser(keyType: TypeDecl): ((key: string) => unknown) | undefined {
  switch (keyType.name) {
    case 'int':
      return (k) => (/^-?\d+$/.test(k) ? BigInt(k) : k);
    case 'uint':
      return (k) => (/^\d+$/.test(k) ? new UnsignedInt(BigInt(k)) : k);
    case 'bool':
      return (k) => (k === 'true' ? true : k === 'false' ? false : k);
    default:
      return undefined;
  }
}

function typeCheck(checker: Checker, m: TwoVarMacro, ctx: Scope): TypeDecl {
  const p = m.parts;
  const range = checker.check(m.receiver, ctx);
  const dyn = checker.getType('dyn');
  let first: TypeDecl;
  let second: TypeDecl;
  p.keyOf = undefined;
  p.entryKeyOf = undefined;
  if (range.kind === 'dyn') [first, second] = [dyn, dyn];
  else if (range.kind === 'list') [first, second] = [checker.getType('int'), concrete(checker, range.valueType)];
  else if (range.kind === 'map') {
    [first, second] = [concrete(checker, range.keyType), concrete(checker, range.valueType)];
    p.keyOf = keyParser(first);
  } else {
    throw checker.createError('invalid_comprehension_range', `expression of type '${goType(checker, range)}' cannot be range of a comprehension (must be list, map, or dynamic)`, m.receiver);
  }
  p.scope1 = ctx.forkWithVariable(p.var1, first);
  p.scope2 = p.scope1.forkWithVariable(p.var2, second);
  const exprType = checker.check(p.expr, p.scope2);
  const bool = checker.getType('bool');
  switch (p.kind) {
    case 'all':
    case 'exists':
      if (!isBool(exprType)) throw checker.createError('invalid_predicate', `expected type 'bool' but found '${goType(checker, exprType)}'`, p.expr);
      return bool;
    case 'existsOne':
      if (!isBool(exprType)) throw checker.createError('no_matching_overload', `found no matching overload for '_?_:_' applied to '(${goType(checker, exprType)}, int, int)'`, p.expr);
      return bool;
  }
  let result: TypeDecl;
  if (p.kind === 'transformList') result = checker.registry.getListType(concrete(checker, exprType));
  else if (p.kind === 'transformMap') result = checker.registry.getMapType(first, concrete(checker, exprType));
  else if (exprType.kind === 'map') {
    result = concrete(checker, exprType);
    p.entryKeyOf = keyParser(result.keyType!);
  } else if (exprType.kind === 'dyn') result = checker.registry.getMapType(dyn, dyn);
  else throw checker.createError('no_matching_overload', `found no matching overload for 'cel.@mapInsert' applied to '(map(dyn, dyn), ${goType(checker, exprType)})'`, p.expr);
  if (p.filter) {
    const filterType = checker.check(p.filter, p.scope2);
    if (!isBool(filterType)) {
      const r = goType(checker, result);
      throw checker.createError('no_matching_overload', `found no matching overload for '_?_:_' applied to '(${goType(checker, filterType)}, ${r}, ${r})'`, p.filter);
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/** Calls `each(first, second)` for every entry of a list or map; false from `each` stops. */
function forEachEntry(range: unknown, keyOf: Parts['keyOf'], each: (first: unknown, second: unknown) => boolean): void {
  if (Array.isArray(range)) {
    for (let i = 0; i < range.length; i++) if (!each(BigInt(i), range[i])) return;
    return;
  }
  if (range instanceof Set) {
    let i = 0;
    for (const v of range) if (!each(BigInt(i++), v)) return;
    return;
  }
  if (range instanceof Map) {
    for (const [k, v] of range) if (!each(k, v)) return;
    return;
  }
  if (typeof range === 'object' && range !== null && (range.constructor === Object || range.constructor === undefined)) {
    const object = range as Record<string, unknown>;
    for (const k of Object.keys(object)) if (!each(keyOf ? keyOf(k) : k, object[k])) return;
    return;
  }
  throw celError(`unsupported comprehension range type: ${goTypeName(range)}`);
}

/** The error a step yields: its own, or cel-go's for a non-bool where a bool was needed. */
function asError(v: unknown): Error {
  return v instanceof Error ? v : celError('no such overload');
}

/** Identity of a map key under CEL equality (1, 1u and 1.0 are the same key). */
function keyId(k: unknown): unknown {
  if (typeof k === 'bigint') return `n${k}`;
  if (k instanceof UnsignedInt) return `n${k.value}`;
  if (typeof k === 'number') return Number.isInteger(k) ? `n${BigInt(k)}` : `d${k}`;
  if (typeof k === 'string') return `s${k}`;
  if (typeof k === 'boolean') return `b${k}`;
  if (k === null) return 'null';
  return k;
}

/** A key as Go's `%v` prints it in cel-go's messages. */
function keyText(k: unknown): string {
  if (k instanceof UnsignedInt) return String(k.value);
  if (k === null) return 'NULL_VALUE';
  return String(k);
}

/** The accumulating map of transformMap / transformMapEntry: insertion-ordered, keys compared as CEL does. */
class Accumulator {
  readonly entries = new Map<unknown, [unknown, unknown]>();

  /** Adds the entry; an error if the key is there already. */
  insert(key: unknown, value: unknown): Error | undefined {
    const id = keyId(key);
    if (this.entries.has(id) || (typeof id === 'object' && [...this.entries.values()].some(([k]) => celEquals(k, key)))) {
      return celError(`insert failed: key ${keyText(key)} already exists`);
    }
    this.entries.set(id, [key, value]);
    return undefined;
  }

  /** The CEL map: a plain object when every key is a string (as JSON objects are), else a Map. */
  value(): unknown {
    const entries = [...this.entries.values()];
    if (!entries.every(([k]) => typeof k === 'string')) return new Map(entries);
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries) Object.defineProperty(out, k as string, { value: v, enumerable: true, writable: true, configurable: true });
    return out;
  }
}

function entriesOf(map: unknown): [unknown, unknown][] | undefined {
  if (map instanceof Map) return [...map];
  if (typeof map === 'object' && map !== null && (map.constructor === Object || map.constructor === undefined)) return Object.entries(map);
  return undefined;
}

// cel-go's cost of each part of the expansion: a variable read 1, a call 1, a list literal 10.
/** `@not_strictly_false(@result)` */
const ALL_CONDITION = 2;
/** `@not_strictly_false(!@result)` */
const EXISTS_CONDITION = 3;
/** `@result && p`, `@result || p`: the accumulator read */
const QUANTIFIER_STEP = 1;
/** `@result + 1` */
const COUNT_STEP = 2;
/** `@result + [t]`: the read, the list, the addition */
const LIST_STEP = 12;
/** `cel.@mapInsert(@result, k, t)`: the call, the two reads */
const MAP_STEP = 3;
/** `cel.@mapInsert(@result, t)`: the call, the read */
const ENTRY_STEP = 2;
/** What a team's policy is charged beyond cel-go's figure for each entry a map-building macro inserts. */
const STRICT_MAP_ENTRY = 10;

function evaluate(ev: Evaluator, m: TwoVarMacro, ctx: unknown): unknown {
  const p = m.parts;
  const range = ev.run(m.receiver, ctx);
  const costs = (p.costs ??= { filter: p.filter ? instrument(p.filter, p.strict) : 0, expr: instrument(p.expr, p.strict) });
  const scope1 = p.scope1!.reuse(ctx);
  const scope = p.scope2!.reuse(scope1);
  const { expr, filter } = p;
  const bind = (first: unknown, second: unknown) => {
    scope1.setIterValue(first, ev);
    scope.setIterValue(second, ev);
  };

  switch (p.kind) {
    case 'all':
    case 'exists': {
      // all: accu = accu && p while accu is not false; exists: accu = accu || p while accu is not true
      const decides = p.kind === 'exists';
      const condition = decides ? EXISTS_CONDITION : ALL_CONDITION;
      let accu = !decides as boolean | Error;
      let stopped = false;
      forEachEntry(range, p.keyOf, (first, second) => {
        if (!charge(condition)) return !(stopped = true);
        if (accu === decides) return false;
        if (!charge(QUANTIFIER_STEP + costs.expr)) return !(stopped = true);
        bind(first, second);
        const r = ev.tryEval(expr, scope);
        if (r === decides) accu = decides;
        else if (r !== !decides && accu === !decides) accu = asError(r);
        return true;
      });
      if (stopped || !charge(1)) return accu === decides;
      if (accu instanceof Error) throw accu;
      return accu;
    }
    case 'existsOne': {
      let accu = 0n as bigint | Error;
      let stopped = false;
      forEachEntry(range, p.keyOf, (first, second) => {
        if (!charge(costs.expr)) return !(stopped = true);
        bind(first, second);
        const r = ev.tryEval(expr, scope);
        if (r === true) {
          if (!charge(COUNT_STEP)) return !(stopped = true);
          if (typeof accu === 'bigint') accu++;
        } else if (r !== false) accu = asError(r); // the conditional yields its condition's error
        return true;
      });
      if (stopped || !charge(2)) return false;
      if (accu instanceof Error) throw accu;
      return accu === 1n;
    }
  }

  // transformList, transformMap, transformMapEntry: accu = filter ? step : accu
  const list: unknown[] = [];
  const map = new Accumulator();
  let error: Error | undefined;
  let stopped = false;
  // (a team's policy: a map built key by key is dear in V8 once large; docs/adr/0014-cost-of-calls-as-measured.md)
  const stepCost = p.kind === 'transformList' ? LIST_STEP : (p.kind === 'transformMap' ? MAP_STEP : ENTRY_STEP) + (p.strict ? STRICT_MAP_ENTRY : 0);
  forEachEntry(range, p.keyOf, (first, second) => {
    bind(first, second);
    if (filter) {
      if (!charge(costs.filter)) return !(stopped = true);
      const f = ev.tryEval(filter, scope);
      if (f === false) return true;
      if (f !== true) {
        error = asError(f); // the conditional yields its condition's error, whatever the accumulator held
        return true;
      }
    }
    if (!charge(stepCost + costs.expr)) return !(stopped = true);
    const t = ev.tryEval(expr, scope);
    if (error) return true; // the accumulator's error comes first in `@result + [t]` / `cel.@mapInsert(@result, ...)`
    if (t instanceof Error) {
      error = t;
      return true;
    }
    if (p.kind === 'transformList') list.push(t);
    else if (p.kind === 'transformMap') error = map.insert(first, t);
    else {
      const entries = entriesOf(t);
      if (!entries) error = celError(`no such overload: cel.@mapInsert(map, ${typeName(t)})`);
      else {
        const keyOf = p.entryKeyOf;
        for (const [k, v] of entries) if ((error = map.insert(keyOf && typeof k === 'string' ? keyOf(k) : k, v))) break;
      }
    }
    return true;
  });
  if (stopped || !charge(1)) return p.kind === 'transformList' ? list : map.value();
  if (error) throw error;
  return p.kind === 'transformList' ? list : map.value();
}

export function registerComprehensions(env: Environment): void {
  // cel-js finds a macro by name and argument count (the receiver type is not looked at), next to
  // its own one-variable all/exists/exists_one(ast, ast)
  const macro = (signature: string, kind: Kind, arity: 3 | 4) => env.registerFunction(signature, expand(kind, arity) as never);
  macro('list.all(ast, ast, ast): bool', 'all', 3);
  macro('list.exists(ast, ast, ast): bool', 'exists', 3);
  macro('list.existsOne(ast, ast, ast): bool', 'existsOne', 3);
  macro('list.exists_one(ast, ast, ast): bool', 'existsOne', 3);
  macro('list.transformList(ast, ast, ast): list<dyn>', 'transformList', 3);
  macro('list.transformList(ast, ast, ast, ast): list<dyn>', 'transformList', 4);
  macro('list.transformMap(ast, ast, ast): map<dyn, dyn>', 'transformMap', 3);
  macro('list.transformMap(ast, ast, ast, ast): map<dyn, dyn>', 'transformMap', 4);
  macro('list.transformMapEntry(ast, ast, ast): map<dyn, dyn>', 'transformMapEntry', 3);
  macro('list.transformMapEntry(ast, ast, ast, ast): map<dyn, dyn>', 'transformMapEntry', 4);
}
