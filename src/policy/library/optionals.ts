/**
 * The parts of CEL's optional types (enabled in Kubernetes since 1.28) that cel-js lacks:
 * optional.ofNonZeroValue(), the optMap / optFlatMap macros, and equality of optionals. The rest
 * (`.?`, `[?`, optional.of/none, hasValue, value, or, orValue) is cel-js's own. Optional list and
 * map entries (`[?x]`, `{?'k': v}`), which cel-js does not parse, are rewritten before it parses
 * (celjs/rewrite.ts) into calls of the two entry functions registered here.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { forEachNode, type RawNode } from '../celjs/walk.ts';
import { celEquals, celError, Duration, Optional, UnsignedInt } from '../celjs/values.ts';
import { OPTIONAL_LIST, OPTIONAL_LIST_ENTRY, OPTIONAL_MAP_ENTRY } from '../celjs/rewrite.ts';

/** cel-go's IsZeroValue: false, 0, 0u, 0.0, '', b'', [], {}, null, a zero duration, the epoch. */
function isZeroValue(v: unknown): boolean {
  if (v === null || v === false || v === '' || v === 0n || v === 0) return true;
  if (v instanceof UnsignedInt) return v.value === 0n;
  if (v instanceof Uint8Array) return v.length === 0;
  if (Array.isArray(v)) return v.length === 0;
  if (v instanceof Set || v instanceof Map) return v.size === 0;
  if (v instanceof Duration) return v.seconds === 0n && v.nanos === 0;
  if (v instanceof Date) return v.getTime() === 0;
  if (typeof v === 'object' && (v.constructor === Object || v.constructor === undefined)) return Object.keys(v).length === 0;
  return false;
}

interface MacroNode {
  op: string;
  args: unknown;
}
interface Checker {
  check(node: MacroNode, ctx: unknown): TypeDecl;
  getType(name: string): TypeDecl;
  createError(code: string, message: string, node: MacroNode): Error;
  registry: unknown;
}
interface TypeDecl {
  kind: string;
  valueType?: TypeDecl;
}
interface Evaluator {
  run(node: MacroNode, ctx: unknown): unknown;
}
interface Context {
  forkWithVariable(name: string, type: TypeDecl): Context & { reuse(parent: unknown): Context & { setIterValue(v: unknown, ev: Evaluator): unknown } };
}

interface OptionalMapMacro {
  receiver: MacroNode;
  name: string;
  expr: MacroNode;
  scope: ReturnType<Context['forkWithVariable']> | undefined;
  typeCheck(checker: Checker, m: OptionalMapMacro, ctx: Context): TypeDecl;
  evaluate(ev: Evaluator, m: OptionalMapMacro, ctx: unknown): unknown;
}

/** `opt.optMap(x, expr)` (flat: false) and `opt.optFlatMap(x, expr)` (flat: true). */
function optionalMapMacro(name: 'optMap' | 'optFlatMap', flat: boolean) {
  return ({ args, receiver }: { args: MacroNode[]; receiver: MacroNode }): OptionalMapMacro => {
    const variable = args[0]!;
    if (variable.op !== 'id' || typeof variable.args !== 'string') throw celError(`${name}() variable name must be a simple identifier`);
    const macro: OptionalMapMacro = {
      receiver,
      name: variable.args,
      expr: args[1]!,
      scope: undefined,
      typeCheck(checker: Checker, m: OptionalMapMacro, ctx: Context): TypeDecl {
        const type = checker.check(m.receiver, ctx);
        if (type.kind !== 'optional' && type.kind !== 'dyn') throw checker.createError('optional_expected', `${name}() receiver must be optional, got '${String(type)}'`, m.receiver);
        m.scope = ctx.forkWithVariable(m.name, type.kind === 'optional' ? type.valueType! : checker.getType('dyn'));
        const result = checker.check(m.expr, m.scope);
        if (flat) {
          if (result.kind !== 'optional' && result.kind !== 'dyn') throw checker.createError('optional_expected', `${name}() expression must be optional, got '${String(result)}'`, m.expr);
          return result.kind === 'optional' ? result : checker.getType('optional');
        }
        return checker.getType('optional');
      },
      evaluate(ev: Evaluator, m: OptionalMapMacro, ctx: unknown): unknown {
        const opt = ev.run(m.receiver, ctx);
        if (!(opt instanceof Optional)) throw celError(`${name}() receiver must be optional`);
        if (!opt.hasValue()) return Optional.none();
        const result = ev.run(m.expr, m.scope!.reuse(ctx).setIterValue(opt.value(), ev));
        if (!flat) return Optional.of(result);
        if (!(result instanceof Optional)) throw celError(`${name}() expression must be optional`);
        return result;
      },
    };
    return macro;
  };
}

export function registerOptionals(env: Environment): void {
  env.registerFunction('OptionalNamespace.ofNonZeroValue(dyn): optional<dyn>', (_: unknown, v: unknown) => (isZeroValue(v) ? Optional.none() : Optional.of(v)));
  env.registerFunction('optional.optMap(ast, ast): optional<dyn>', optionalMapMacro('optMap', false) as never);
  env.registerFunction('optional.optFlatMap(ast, ast): optional<dyn>', optionalMapMacro('optFlatMap', true) as never);
  env.registerOperator('optional == optional', (a: Optional, b: Optional) => celEquals(a, b));
  // type(optional.none()) == optional_type, as cel-go names an optional's type; cel-js's type
  // values are of one class, taken from one of them
  const TypeValue = (env.evaluate('type(1)') as object).constructor as new (name: string) => unknown;
  const optionalType = new TypeValue('optional_type');
  env.registerFunction('type(optional<T>): type', () => optionalType);
  env.registerConstant('optional_type', 'type', optionalType);
  // `[a, ?b]` is `list([a] + entry(b))`; `{?k: v}` is `entry({}, k, v)` (celjs/rewrite.ts)
  env.registerFunction(`${OPTIONAL_LIST}(list<T>): list<T>`, (list: unknown) => list);
  env.registerFunction(`${OPTIONAL_LIST_ENTRY}(optional<T>): list<T>`, (o: unknown) => (presentValue(o) ? [(o as Optional).value()] : []));
  env.registerFunction(`${OPTIONAL_MAP_ENTRY}(map<K, V>, K, optional<V>): map<K, V>`, (map: unknown, key: unknown, o: unknown) => {
    if (!presentValue(o)) return map;
    if (map instanceof Map) return new Map(map).set(key, (o as Optional).value());
    const out: Record<string, unknown> = { ...(map as Record<string, unknown>) };
    const name = String(key);
    // as cel-js builds a map literal: never a key that would reach the prototype
    if (name !== '__proto__' && name !== 'constructor' && name !== 'prototype') out[name] = (o as Optional).value();
    return out;
  });
}

/** Whether an optional entry's value is there; as cel-go, an entry that is not an optional is an error. */
function presentValue(o: unknown): boolean {
  if (!(o instanceof Optional)) throw celError(`found no matching overload for '_?_' applied to '(${typeof o})'`);
  return o.hasValue();
}

/**
 * cel-go types `x.orValue(v)` on a receiver that is `dyn` (not an optional of dyn) as `v`'s type:
 * its `optional(V)` leaves V unbound there, and VAP declares a variable holding an optional as dyn.
 * cel-js types it dyn, so what the API server's type checker refuses for it is refused here where
 * it is sure to be: comparing it with null when `v` is a literal of a type null is not (a map,
 * list, string, number or bool). A check of the checked AST `root`; throws the first problem.
 */
export function validateOrValueNullComparisons(root: unknown): void {
  forEachNode(root, (node) => {
    if ((node.op !== '==' && node.op !== '!=') || !Array.isArray(node.args)) return;
    const [left, right] = node.args as RawNode[];
    const isNull = (n: RawNode | undefined) => n?.op === 'value' && n.args === null;
    const other = isNull(right) ? left : isNull(left) ? right : undefined;
    const type = other && orValueOnDyn(other);
    if (!type) return;
    const operands = isNull(right) ? `${type}, null` : `null, ${type}`;
    throw new Error(`found no matching overload for '_${node.op}_' applied to '(${operands})'`);
  });
}

/** The cel-go type of `node` when it is `x.orValue(<literal>)` with `x` dyn; undefined otherwise. */
function orValueOnDyn(node: RawNode): string | undefined {
  if (node.op !== 'rcall' || !Array.isArray(node.args) || node.args[0] !== 'orValue') return undefined;
  const receiver = node.args[1] as RawNode | undefined;
  const arg = (node.args[2] as RawNode[] | undefined)?.[0];
  if (receiver?.checkedType?.name !== 'dyn' || !arg) return undefined;
  if (arg.op === 'map' || arg.op === 'list') {
    const name = arg.checkedType?.name ?? '';
    // an empty literal's parameters are unbound: dyn to cel-go
    const goName = name
      .replace(/\b[A-Z]\b/g, 'dyn')
      .replaceAll('<', '(')
      .replaceAll('>', ')');
    return goName || undefined;
  }
  if (arg.op === 'value' && arg.args !== null) return arg.checkedType?.name;
  return undefined;
}
