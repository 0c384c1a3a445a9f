/**
 * The CEL environment with ValidatingAdmissionPolicy's variables and every library, and `compile`:
 * parse, type-check, the API server's compile-time checks, cost instrumentation and the compiled
 * shortcut, once per expression per suite generation. Pure: no I/O, no Kubernetes client, no
 * HTTP; evaluating validations and mutations is rules.ts's. Errors carry the field path of the
 * expression they came from.
 */
import { Environment, type ParseResult } from '@marcbachmann/cel-js';
import { CompileError, firstLine, type Program } from '../celjs/program.ts';
import { errorOffset, type PositionedNode } from '../celjs/error-position.ts';
import { registerLists, validateListCall } from '../library/lists.ts';
import { registerListsExt, validateListsExtCall } from '../library/lists-ext.ts';
import { checkFormatCall, registerStrings, replaceStringBuiltins } from '../library/strings.ts';
import { registerRegex, replaceRegexBuiltins, validateRegexCall } from '../library/regex.ts';
import { forEachCall, type CallNode } from '../celjs/walk.ts';
import { validateHomogeneousLiterals } from '../library/homogeneous.ts';
import { registerURLs } from '../library/urls.ts';
import { registerFormat } from '../library/format.ts';
import { registerIP } from '../library/ip.ts';
import { registerCIDR } from '../library/cidr.ts';
import { registerQuantity } from '../library/quantity.ts';
import { registerSemver } from '../library/semver.ts';
import { registerSets, validateSetsCall } from '../library/sets.ts';
import { registerOptionals, validateOrValueNullComparisons } from '../library/optionals.ts';
import { celGoType, policyNames, registerJsonPatch, validatePatchTypes } from '../library/jsonpatch.ts';
import { registerApplyConfiguration } from '../library/apply-configuration.ts';
import { registerComprehensions } from '../library/comprehensions.ts';
import { celGoCheckMessage, replaceNumericComparisons } from '../library/numeric.ts';
import { replaceDoubleBuiltins } from '../library/doubles.ts';
import { registerConversions, replaceConversionBuiltins, validateConversionCall } from '../library/conversions.ts';
import { registerBytes } from '../library/bytes.ts';
import { replaceArithmetic } from '../library/arithmetic.ts';
import { replaceTimestampBuiltins } from '../library/timestamps.ts';
import { AUTHORIZER_TYPE, registerAuthz } from '../library/authz.ts';
import { withCost } from '../cost/instrument.ts';
import { shortcutFor, type Body } from '../fast/shortcut.ts';
import { useCelGoLogic } from '../celjs/logic.ts';
import { useCelGoEquality } from '../celjs/equality.ts';
import { parseExpression } from '../celjs/parse.ts';
import { CelSyntaxError, located } from '../celjs/syntax-errors.ts';
import { CODE_POINT_LIMIT } from '../celjs/limits.ts';

/**
 * cel-js's own parse limits, out of the way of the API server's (celjs/limits.ts, checked first):
 * its maxDepth counts nesting and each `.` or `[` step alike, and refuses 250 selections the API
 * server takes; lists, maps and calls are bounded there only by the expression's size. (A source
 * the limits cannot follow may nest cel-js's parser until the stack ends: a RangeError, which
 * `compile` turns into a refusal.)
 */
const CEL_JS_LIMITS = {
  maxDepth: CODE_POINT_LIMIT,
  maxAstNodes: 2 * CODE_POINT_LIMIT,
  maxListElements: CODE_POINT_LIMIT,
  maxMapEntries: CODE_POINT_LIMIT,
  maxCallArguments: CODE_POINT_LIMIT,
};

/** The variables VAP declares; `object`, `oldObject` and `params` are untyped (dyn), as in VAP. */
const ACTIVATION_VARIABLES = ['object', 'oldObject', 'params', 'namespaceObject', 'request', 'variables'] as const;

/**
 * The environment with every library; `variables` (name -> cel-js type) default to VAP's. Other
 * variables are for tests that run foreign expressions (the cel-spec conformance suite).
 */
export function newEnvironment(variables: Readonly<Record<string, string>> = Object.fromEntries(ACTIVATION_VARIABLES.map((n) => [n, 'dyn'])), declareTypes?: (env: Environment) => void): Environment {
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false, limits: CEL_JS_LIMITS });
  registerAuthz(env); // first: its types are those of the variable `authorizer`
  declareTypes?.(env); // the object types some variables are declared with (typecheck/), before those variables
  for (const [name, type] of Object.entries(variables)) env.registerVariable(name, type);
  registerLists(env);
  registerListsExt(env);
  registerStrings(env);
  registerRegex(env);
  registerURLs(env);
  registerFormat(env);
  registerIP(env);
  registerCIDR(env);
  registerQuantity(env);
  registerSemver(env);
  registerSets(env);
  registerOptionals(env);
  registerJsonPatch(env);
  registerApplyConfiguration(env);
  registerComprehensions(env);
  registerConversions(env);
  registerBytes(env);
  // cel-js's own overloads replaced by cel-go's behaviour; after every registration (see celjs/overloads.ts)
  replaceStringBuiltins(env);
  replaceRegexBuiltins(env);
  replaceNumericComparisons(env);
  replaceDoubleBuiltins(env);
  replaceConversionBuiltins(env);
  replaceArithmetic(env);
  replaceTimestampBuiltins(env);
  return env;
}

/** The compile-time checks of literal arguments the API server's environment makes; throws the first problem. */
export function validateProgram(program: Program): void {
  forEachCall(program.ast, validateCall);
  validateOrValueNullComparisons(program.ast);
}

function validateCall(call: CallNode): void {
  validateRegexCall(call);
  validateListCall(call);
  validateListsExtCall(call);
  validateSetsCall(call);
  validateConversionCall(call);
  if (call.name === 'format' && typeof call.receiver?.literal === 'string' && call.args.length === 1 && call.args[0]!.elements) {
    checkFormatCall(
      call.receiver.literal,
      call.args[0]!.elements.map((e) => e.type),
    );
  }
}

/**
 * As VAP: `params` is declared only for a policy that has a paramKind (here: a webhook with
 * params); `authorizer` (and `authorizer.requestResource`) everywhere but in messageExpressions;
 * `variables` everywhere but in matchConditions.
 */
const environments = new Map<string, Environment>();
function vapEnvironment(params: boolean, authorizer: boolean, withVariables = true): Environment {
  const key = `${params}/${authorizer}/${withVariables}`;
  let env = environments.get(key);
  if (!env) {
    const declared = ACTIVATION_VARIABLES.filter((n) => (params || n !== 'params') && (withVariables || n !== 'variables'));
    const variables: Record<string, string> = Object.fromEntries(declared.map((n) => [n, 'dyn']));
    if (authorizer) variables.authorizer = AUTHORIZER_TYPE;
    environments.set(key, (env = newEnvironment(variables)));
  }
  return env;
}
vapEnvironment(true, true);
vapEnvironment(false, true);

/** `list(JSONPatch)`: a MAP jsonPatch expression's, exactly (dyn refused), as the API server's. */
export type ResultType = 'bool' | 'string' | 'list' | 'null' | 'list(JSONPatch)';

/**
 * Parses and type-checks `expression`; `expect` lists the types it may yield (any when empty);
 * `params`, `authorizer` and `variables` say whether those variables are declared (by default they are).
 */
export function compile(expression: string, field: string, expect: ResultType[] = [], options: CompileOptions = {}): Program {
  try {
    return compileExpression(expression, field, expect, options);
  } catch (err) {
    // Whatever a step throws (cel-js's checker, a walk, the shortcut's code generation: a
    // RangeError, a TypeError on a shape nobody foresaw) refuses this expression, never the caller.
    if (err instanceof CompileError) throw err;
    throw new CompileError(field, `compilation failed: ${firstLine(err)}`);
  }
}

/**
 * A type-check error as the API server words a validation's (cel-go's Errors.ToDisplayString):
 * `ERROR: <input>:LINE:COL: ...` at the place cel-go puts it, the line and a caret; an all/exists
 * predicate that is not bool and a name never declared in cel-go's words (it checks the macro's expansion). A MAP mutation's
 * stay bare: the API server words its type errors so (test/fixtures/map-write-errors.ts).
 */
/** The check errors cel-go words this way, whose place is known (an optional entry's is not: it stays without one). */
const CEL_GO_WORDS = /^(found no matching overload for |expected type 'bool' but found |undeclared reference to |undefined field )/;

function checkErrorText(expression: string, error: unknown, patch: boolean): string {
  const message = policyNames(celGoCheckMessage(error));
  const node = (error as { node?: PositionedNode } | null)?.node;
  if (patch || !node) return message;
  const macro = /^(?:all|exists)\(var, predicate\) predicate must return bool, got '(.*)'$/.exec(message);
  const unknown = /^Unknown variable: (.*)$/.exec(message);
  // cel-go checks a conditional as the overload `_?_:_(bool, T, T)`: branches of two types match none.
  const branches = /^Ternary branches must have the same type, got '(.*)' and '(.*)'$/.exec(message);
  const goType = (type: string) => type.replaceAll('<', '(').replaceAll('>', ')');
  const words = macro
    ? `expected type 'bool' but found '${goType(macro[1]!)}'`
    : unknown
      ? `undeclared reference to '${unknown[1]}' (in container '')`
      : branches
        ? `found no matching overload for '_?_:_' applied to '(bool, ${goType(branches[1]!)}, ${goType(branches[2]!)})'`
        : message;
  // Only words that are cel-go's get cel-go's place; cel-js's own (has() invalid argument) stay as they are.
  if (!CEL_GO_WORDS.test(words)) return message;
  // sortBy is expanded into a call with no place of its own in the source; cel-go's caret is at the `(` of `.sortBy(`.
  const sortBy = words.includes("'@sortByAssociatedKeys'") ? expression.indexOf('(', expression.indexOf('.sortBy')) : -1;
  return located(expression, sortBy >= 0 ? sortBy : errorOffset(expression, node), words);
}

export interface CompileOptions {
  params?: boolean;
  authorizer?: boolean;
  variables?: boolean;
  mixedLiterals?: boolean;
  compiledVariables?: ReadonlySet<string>;
  /** The variables whose value is a part of the request as it is (celjs/equality.ts). */
  requestVariables?: ReadonlySet<string>;
  /** Charged as a team's AdmissionPolicy is: by real sizes whatever the static types, with the namespace's deadline (cost/instrument.ts). */
  strictCost?: boolean;
  /** A MAP mutation's expression: MAP's JSONPatch type and jsonpatch library are declared (library/jsonpatch.ts); anywhere else they are not. */
  patchTypes?: boolean;
}

function compileExpression(expression: string, field: string, expect: ResultType[], options: CompileOptions): Program {
  const environment = vapEnvironment(options.params !== false, options.authorizer !== false, options.variables !== false);
  let program: Program;
  try {
    program = parseExpression(environment, expression);
  } catch (err) {
    // a syntax error keeps its caret lines, as the API server's does
    throw new CompileError(field, `compilation failed: ${err instanceof CelSyntaxError ? err.message : firstLine(err)}`);
  }
  const checked = program.check();
  if (!checked.valid) throw new CompileError(field, `compilation failed: ${checkErrorText(expression, checked.error, options.patchTypes === true)}`);
  try {
    // Not in validateProgram: the cel-spec suite mixes types in literals; and mutations (no VAP
    // counterpart) build JSON-patch maps whose values are of every type.
    if (!options.mixedLiterals) validateHomogeneousLiterals(program.ast);
    validateProgram(program);
    validatePatchTypes(program.ast, options.patchTypes === true);
  } catch (err) {
    throw new CompileError(field, `compilation failed: ${firstLine(err)}`);
  }
  const type = checked.type ?? 'dyn';
  // As the API server: a validation, message or audit value must be of its exact type (dyn is
  // refused); a patchExpression may be any list, typed or not.
  const fits = (want: string) => (want === 'list' ? type === 'dyn' || type.startsWith('list') : want === 'list(JSONPatch)' ? type === 'list<JSONPatch>' : type === want);
  if (expect.length && !expect.some(fits)) {
    const names = expect.map(celGoTypeName);
    const wanted = names.length === 1 ? names[0] : `one of [${names.join(' ')}]`;
    throw new CompileError(field, `must evaluate to ${wanted} but got ${expect.includes('list(JSONPatch)') ? celGoType(type) : celGoTypeName(type)}`);
  }
  useCelGoLogic(program.ast);
  useCelGoEquality(program.ast, options.requestVariables);
  let body: Body | undefined;
  let celjs: ParseResult | undefined;
  const run = withCost(
    program,
    (instrumented) => {
      celjs = instrumented;
      return (body = shortcutFor(instrumented, options.compiledVariables, options.strictCost));
    },
    options.strictCost,
  );
  const direct = body?.direct && { run: body.direct, staticCost: run.staticCost, celjs: celjs! };
  return Object.assign(run, { compiled: direct !== undefined, direct });
}

/** cel-go's name of a type, as the API server's messages print it. */
function celGoTypeName(type: string): string {
  return type === 'null' ? 'null_type' : type;
}
