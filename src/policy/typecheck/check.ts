/**
 * A webhook's expressions type-checked per kind its rules match, as VAP's TypeChecker (typechecking.go):
 * `object`/`oldObject` of the kind's schema types (schema.ts), `params` of its kind's or dyn, each
 * variable of its expression's type (dyn when it fails: only uses are reported), validations and
 * messageExpressions checked with every library; a failure is a warning naming the kind in the API
 * server's words (`apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'`, caret
 * lines). Pure and compile-time only: the request path never sees these environments.
 */
import type { Environment } from '@marcbachmann/cel-js';
import type { ExpressionWarning, WebhookSpec } from '../../api/types.ts';
import { newEnvironment } from '../engine/environment.ts';
import { celGoCheckMessage } from '../library/numeric.ts';
import { AUTHORIZER_TYPE } from '../library/authz.ts';
import { parseExpression } from '../celjs/parse.ts';
import { errorOffset, type PositionedNode } from '../celjs/error-position.ts';
import { LIST_ELEMENT, MAP_ELEMENT, type SchemaTypes } from './schema.ts';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** A kind a webhook matches, with its CEL types (undefined types: checked as dyn, so never warned about). */
export interface CheckedKind {
  gvk: GroupVersionKind;
  types: SchemaTypes;
}

/** A warning, and whether the expression failed on every kind checked (a definite error). */
export interface CheckedExpression extends ExpressionWarning {
  definite: boolean;
  /** The first kind's message alone (`undefined field 'replicas'`), for a refusal. */
  message: string;
}

/** Go's schema.GroupVersionKind.String(). */
export function gvkString(gvk: GroupVersionKind): string {
  return `${gvk.group}/${gvk.version}, Kind=${gvk.kind}`;
}

interface Expression {
  field: string;
  source: string;
  /** matchConditions are compiled without `variables`. */
  variables: boolean;
}

/**
 * The expressions of a webhook that are checked, in the order they are reported: the variables
 * (for the types their uses see; never reported, as the API server reports none), then what the
 * API server's TypeChecker reports (typechecking.go Check): each validation's expression and
 * messageExpression.
 */
function expressionsOf(webhook: WebhookSpec, path: string): { variables: Expression[]; others: Expression[] } {
  const variables = (webhook.variables ?? []).map((v, i) => ({ field: `${path}.variables[${i}].expression`, source: v.expression, variables: true }));
  const others: Expression[] = [];
  (webhook.validations ?? []).forEach((v, i) => {
    others.push({ field: `${path}.validations[${i}].expression`, source: v.expression, variables: true });
    if (v.messageExpression) others.push({ field: `${path}.validations[${i}].messageExpression`, source: v.messageExpression, variables: true });
  });
  return { variables, others };
}

/**
 * The warnings of `webhook` (at `path`) checked against `kinds` (at most ten, as VAP), with
 * `params` typed by `paramsTypes` when the webhook has params and their schema is known.
 * Expressions that do not compile at all are the registry's to refuse; here they are skipped.
 */
export function typeCheckWebhook(webhook: WebhookSpec, path: string, kinds: readonly CheckedKind[], paramsTypes?: SchemaTypes): CheckedExpression[] {
  if (webhook.handler || kinds.length === 0) return [];
  const { variables, others } = expressionsOf(webhook, path);
  const failures = new Map<string, { kind: GroupVersionKind; text: string; message: string }[]>();
  for (const kind of kinds) {
    const base = baseEnvironment(kind.types, webhook.params !== undefined, paramsTypes);
    // Each variable sees the ones before it, with their types (VAP's composition environment).
    const declared: Record<string, string> = {};
    const withVariables = () => {
      const env = base.clone();
      const name = `Variables${Object.keys(declared).length}`;
      env.registerType(name, { fields: { ...declared } });
      env.registerVariable('variables', name);
      return env;
    };
    const record = (expression: Expression, env: Environment, reported = true): string | undefined => {
      let program;
      try {
        program = parseExpression(env, expression.source);
      } catch {
        return undefined; // does not parse: the registry refuses it
      }
      const result = program.check();
      if (result.valid) return result.type ?? 'dyn';
      if (nullTernary(result.error, kind.types, paramsTypes)) return 'null';
      const problem = reported ? describe(expression.source, result.error, program.ast) : undefined;
      if (problem) {
        const list = failures.get(expression.field) ?? [];
        list.push({ kind: kind.gvk, ...problem });
        failures.set(expression.field, list);
      }
      return undefined;
    };
    for (const [i, variable] of variables.entries()) {
      const type = record(variable, withVariables(), false);
      declared[webhook.variables![i]!.name] = variableType(type);
    }
    const full = withVariables();
    for (const expression of others) record(expression, expression.variables ? full : base);
    hasChecks(kind.types, others, failures, kind.gvk);
  }
  const out: CheckedExpression[] = [];
  for (const expression of [...variables, ...others]) {
    const list = failures.get(expression.field);
    if (!list?.length) continue;
    out.push({
      fieldRef: expression.field,
      // TypeCheckingResults.String(): each kind's result ends in a newline; they are joined by another.
      warning: list.map((f) => `${gvkString(f.kind)}: ${f.text}\n`).join('\n'),
      definite: list.length === kinds.length,
      message: list[0]!.message,
    });
  }
  return out;
}

/**
 * `cond ? null : params.spec.parameters` (a Gatekeeper idiom): cel-js wants both branches of one
 * type, where cel-go (the API server's checker) lets `null` stand with a nullable type (an object
 * of a schema, a timestamp, a duration: its isNullable) and types the whole as `null`, reporting
 * nothing. So such an expression is not reported (and what follows in it is left unchecked); a
 * variable so defined is `null` to its uses, where selecting a field warns as the API server's
 * checker does (`type 'null' does not support field selection`).
 */
function nullTernary(error: unknown, types: SchemaTypes, paramsTypes: SchemaTypes | undefined): boolean {
  const match = /^Ternary branches must have the same type, got '([^']+)' and '([^']+)'/.exec(String((error as Error | undefined)?.message ?? error ?? ''));
  if (!match) return false;
  const [a, b] = [match[1]!, match[2]!];
  const other = a === 'null' ? b : b === 'null' ? a : undefined;
  if (other === undefined) return false;
  const nullable = (t: string) => t === 'google.protobuf.Timestamp' || t === 'google.protobuf.Duration' || types.objects.has(t) || (t.startsWith('params.') && (paramsTypes?.objects.has(t.slice('params.'.length)) ?? false));
  return nullable(other);
}

const SCALARS = new Set(['bool', 'bytes', 'double', 'google.protobuf.Duration', 'int', 'null', 'string', 'google.protobuf.Timestamp', 'uint', 'dyn']);

/**
 * The type the expressions after a variable see it with, as VAP's composition environment gives it
 * (convertCelTypeToDeclType): a scalar as it is; a list or map as a list or map, whose elements the
 * API server keeps only when they are its own singleton types (elements of a schema's list, not
 * those a macro makes), so dyn here, which never warns where it would not; an object type, an
 * optional, and a variable that does not type-check (undefined), dyn.
 */
function variableType(type: string | undefined): string {
  if (type === undefined) return 'dyn';
  if (SCALARS.has(type)) return type;
  if (type.startsWith('list<')) return 'list<dyn>';
  if (type.startsWith('map<')) return 'map<dyn, dyn>';
  return 'dyn';
}

const environments = new WeakMap<SchemaTypes, Map<string, Environment>>();

/** The environment of one kind (and params type), without `variables`; cached per schema. */
function baseEnvironment(types: SchemaTypes, hasParams: boolean, paramsTypes: SchemaTypes | undefined): Environment {
  const key = `${hasParams}/${paramsTypes?.root ?? ''}`;
  let byParams = environments.get(types);
  if (!byParams) environments.set(types, (byParams = new Map()));
  let env = byParams.get(key);
  if (env) return env;
  const variables: Record<string, string> = { object: types.root, oldObject: types.root, namespaceObject: 'dyn', request: 'dyn', authorizer: AUTHORIZER_TYPE };
  if (hasParams) variables.params = paramsTypes ? `params.${paramsTypes.root}` : 'dyn';
  env = newEnvironment(variables, (env) => {
    declareObjects(env, types, '');
    if (hasParams && paramsTypes) declareObjects(env, paramsTypes, 'params.');
  });
  byParams.set(key, env);
  return env;
}

/** Registers the object types (params' under a prefix, so a kind and its params never share a name). */
function declareObjects(env: Environment, types: SchemaTypes, prefix: string): void {
  const named = (t: string) => (prefix ? t.replace(/(^|<|, )([A-Za-z][\w.@]*)/g, (m, lead: string, name: string) => (types.objects.has(name) ? `${lead}${prefix}${name}` : m)) : t);
  for (const [name, fields] of types.objects) {
    const own = `${prefix}${name}`;
    env.registerType(own, { fields: Object.fromEntries(Object.entries(fields).map(([f, t]) => [f, named(t)])) });
    // cel-go compares any two values of one type, and any value with dyn.
    env.registerOperator(`${own} == ${own}`, () => false);
    env.registerOperator(`${own} == dyn`, () => false);
  }
}

/** cel-js's check error as cel-go prints it: the message, its position, and the source line with a caret. */
function describe(source: string, error: unknown, ast: unknown): { text: string; message: string } | undefined {
  if (!error) return undefined;
  const node = (error as { node?: PositionedNode }).node;
  const call = callProblem(source, firstLine(error), node, ast);
  const message = (call?.message ?? celGoMessage(error)).replaceAll(`.${LIST_ELEMENT}`, '.@idx').replaceAll(`.${MAP_ELEMENT}`, '.@elem');
  const offset = call?.offset ?? (node ? errorOffset(source, node) : 0);
  return { text: located(source, offset, message), message };
}

function firstLine(error: unknown): string {
  return String((error as Error).message ?? error).split('\n')[0]!;
}

/** cel-go's spelling of a cel-js type (`list<string>` -> `list(string)`). */
function goType(type: string): string {
  return type.replaceAll('<', '(').replaceAll('>', ')');
}

interface CallNode extends PositionedNode {
  args: [string, PositionedNode & { checkedType?: { name: string } }, unknown[]];
}

/** Every node of an AST that `test` picks, each once. */
function nodesWhere(ast: unknown, test: (n: PositionedNode) => boolean): PositionedNode[] {
  const found: PositionedNode[] = [];
  const seen = new Set<unknown>();
  const stack: unknown[] = [ast];
  while (stack.length) {
    const n = stack.pop() as PositionedNode | undefined;
    if (!n || typeof n !== 'object' || seen.has(n)) continue;
    seen.add(n);
    if (test(n)) found.push(n);
    for (const a of Array.isArray(n.args) ? (n.args as unknown[]) : [n.args]) (Array.isArray(a) ? a : [a]).forEach((x) => stack.push(x));
  }
  return found;
}

/** The receiver call named `name` whose arguments hold `inner`, found in the checked AST. */
function findCall(ast: unknown, name: string, inner: PositionedNode): CallNode | undefined {
  return nodesWhere(ast, (n) => {
    const args = Array.isArray(n.args) ? (n.args as unknown[]) : [];
    return n.op === 'rcall' && args[0] === name && (args[1] === inner || (Array.isArray(args[2]) && (args[2] as unknown[]).includes(inner)));
  })[0] as CallNode | undefined;
}

/** The `(` of `.name(` at or after `from`: where cel-go places a receiver call's errors. */
function openParen(source: string, name: string, from: number): number {
  const at = source.indexOf(`.${name}`, from);
  return at < 0 ? from : source.indexOf('(', at);
}

function literalType(n: unknown): string {
  const node = n as { op?: string; args?: unknown; checkedType?: { name: string } };
  if (node?.checkedType) return goType(node.checkedType.name);
  if (node?.op !== 'value') return 'dyn';
  const v = node.args;
  return typeof v === 'string' ? 'string' : typeof v === 'bigint' ? 'int' : typeof v === 'number' ? 'double' : typeof v === 'boolean' ? 'bool' : v === null ? 'null' : 'dyn';
}

/**
 * The errors cel-js words as its own macros' and optionals' checks, in cel-go's words: a macro's
 * predicate that is not bool (cel-go checks the expansion: `expected type 'bool'` for all/exists,
 * the `_?_:_` of exists_one and filter), an optional's method on a value that is not optional, an
 * optional's `orValue` given a default of another type, and two schema objects of different types
 * compared.
 */
function callProblem(source: string, line: string, node: PositionedNode | undefined, ast: unknown): { message: string; offset: number } | undefined {
  // Two schema objects of different types compared: cel-js words its overload table's conflict
  // (`'A == dyn: bool' overlaps with 'dyn == B: bool'`); cel-go finds no overload for (A, B), at the operator.
  const overlap = /^Operator overload '(.+?) (==|!=) (.+?): bool' overlaps with '(.+?) (==|!=) (.+?): bool'\.?$/.exec(line);
  if (overlap) {
    const [, a1, op, b1, a2, , b2] = overlap as unknown as string[];
    const left = a1 !== 'dyn' ? a1! : a2!;
    const right = b1 !== 'dyn' ? b1! : b2!;
    // Where cel-go places it: the operator, when the expression has one such.
    const operators = nodesWhere(ast, (n) => n.op === op);
    const offset = operators.length === 1 ? errorOffset(source, operators[0]!) : 0;
    return { message: `found no matching overload for '_${op}_' applied to '(${goType(left)}, ${goType(right)})'`, offset };
  }
  if (!node) return undefined;
  const macro = /^(all|exists|exists_one|filter)\(var, predicate\) predicate must return bool, got '(.*)'$/.exec(line);
  if (macro) {
    const [, name, got] = macro as unknown as [string, string, string];
    if (name === 'all' || name === 'exists') return { message: `expected type 'bool' but found '${goType(got)}'`, offset: errorOffset(source, node) };
    const call = findCall(ast, name, node);
    if (!call) return undefined;
    const range = call.args[1].checkedType?.name ?? 'dyn';
    const element = /^list<(.*)>$/.exec(range)?.[1] ?? /^map<(.*?), /.exec(range)?.[1] ?? 'dyn';
    const rest = name === 'exists_one' ? 'int, int' : `list(${goType(element)}), list(${goType(element)})`;
    return { message: `found no matching overload for '_?_:_' applied to '(${goType(got)}, ${rest})'`, offset: openParen(source, name, call.pos ?? 0) };
  }
  // A default of another type than the optional's (`annotations.orValue([])`): cel-go finds no overload, at the call's `(`.
  const orValue = /^optional\.orValue\(value\) argument must be compatible type, got '(.*)' and '(.*)'$/.exec(line);
  if (orValue) {
    const [, inner, given] = orValue as unknown as [string, string, string];
    const call = findCall(ast, 'orValue', node);
    if (!call) return undefined;
    // cel-js names an unbound type parameter (`list<T>`); cel-go types it dyn.
    const unbound = (t: string) => goType(t).replace(/\b[A-Z]\b/g, 'dyn');
    return { message: `found no matching overload for 'orValue' applied to 'optional_type(${unbound(inner)}).(${unbound(given)})'`, offset: openParen(source, 'orValue', call.pos ?? 0) };
  }
  const optional = /^optional\.(\w+)\(.*\) receiver must be optional, got '(.*)'$/.exec(line);
  if (optional) {
    const [, name, got] = optional as unknown as [string, string, string];
    const call = findCall(ast, name, node);
    if (!call) return undefined;
    const args = (call.args[2] ?? []).map(literalType).join(', ');
    return { message: `found no matching overload for '${name}' applied to '${goType(got)}.(${args})'`, offset: openParen(source, name, call.pos ?? 0) };
  }
  return undefined;
}

/** `ERROR: <input>:line:col: message` with the line and a caret, as cel-go's Errors.ToDisplayString. */
function located(source: string, offset: number, message: string): string {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  const lineStart = before.lastIndexOf('\n') + 1;
  const column = offset - lineStart;
  const text = source.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${column + 1}: ${message}\n | ${text}\n | ${'.'.repeat(column)}^`;
}

/** cel-js's check messages in cel-go's words. */
function celGoMessage(error: unknown): string {
  const message = celGoCheckMessage(error);
  const field = /^No such key: (.*)$/.exec(message);
  if (field) return `undefined field '${field[1]}'`;
  const index = /^Cannot index type '(.*)'$/.exec(message);
  if (index) return `type '${index[1]}' does not support field selection`;
  // cel-go prints the well-known types by their CEL names, and null, against a schema's types, as `null`.
  return message
    .replaceAll('google.protobuf.Timestamp', 'timestamp')
    .replaceAll('google.protobuf.Duration', 'duration')
    .replace(/^(found no matching overload .*)\bnull_type\b/, '$1null');
}

/**
 * `has(x.f)`: cel-js accepts any field; cel-go refuses a field an object type does not have.
 * Checked here on the select chains from `object`, `oldObject` (and typed params) inside has().
 */
function hasChecks(types: SchemaTypes, expressions: readonly Expression[], failures: Map<string, { kind: GroupVersionKind; text: string; message: string }[]>, gvk: GroupVersionKind): void {
  for (const expression of expressions) {
    if (failures.get(expression.field)?.some((f) => f.kind === gvk)) continue;
    for (const match of expression.source.matchAll(/\bhas\(\s*((?:old)?[oO]bject)((?:\s*\.\s*[A-Za-z_]\w*)+)\s*\)/g)) {
      const variable = match[1]!;
      if (variable !== 'object' && variable !== 'oldObject') continue;
      const parts = [...match[2]!.matchAll(/\.\s*([A-Za-z_]\w*)/g)];
      let type: string | undefined = types.root;
      let offset = match.index! + match[0].indexOf(variable) + variable.length;
      for (const part of parts) {
        const dot = expression.source.indexOf('.', offset);
        offset = dot + 1 + part[0].length - 1;
        if (type === undefined) break;
        const fields = types.objects.get(type);
        if (!fields) break; // maps, dyn, scalars: cel-js's checker has spoken
        const next = fields[part[1]!];
        if (next === undefined) {
          const message = `undefined field '${part[1]}'`;
          const list = failures.get(expression.field) ?? [];
          // cel-go places it at the macro's call, the `(` of has(.
          list.push({ kind: gvk, text: located(expression.source, match.index! + 3, message), message });
          failures.set(expression.field, list);
          break;
        }
        type = next;
      }
    }
  }
}
