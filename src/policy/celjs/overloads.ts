/**
 * Replacing cel-js's own overloads where they differ from cel-go's (UTF-16 indices, Unicode case mapping,
 * JS RegExp, cross-type numeric comparison, overflow) or declare the wrong result type: the one place
 * that reaches into cel-js's overload tables, swapping a declaration's handler and verifying the swap, so
 * a cel-js upgrade that changes these internals fails at start-up (see replaceBuiltin). Must not hold any
 * library's behaviour: the handlers come from the libraries.
 */
import type { Environment } from '@marcbachmann/cel-js';

type Handler = (...args: never[]) => unknown;
interface Declaration {
  signature: string;
  handler: Handler;
  returnType: unknown;
}
interface Candidates {
  declarations: Declaration[];
  add?(decl: Declaration): void;
}

/** The overload table `probe`'s root call or operator is resolved in. `who` names the caller in errors. */
function candidatesOf(env: Environment, probe: string, who: string): Candidates {
  const program = env.parse(probe);
  const checked = program.check();
  if (!checked.valid) throw new Error(`${who}: probe '${probe}' does not type-check: ${checked.error?.message}`);
  const candidates = (program.ast as unknown as { candidates?: Candidates }).candidates;
  if (!candidates || !Array.isArray(candidates.declarations)) throw new Error(`${who}: cel-js internals changed (no candidates for '${probe}')`);
  return candidates;
}

/** Swaps the handler (or more) of `signature` in `candidates` (a frozen copy of the declaration, as cel-js keeps them). */
function swap(candidates: Candidates, signature: string, change: Partial<Declaration>, who: string): void {
  const index = candidates.declarations.findIndex((d) => d.signature === signature);
  if (index < 0) throw new Error(`${who}: no overload '${signature}' (have ${candidates.declarations.map((d) => d.signature).join(', ')})`);
  const old = candidates.declarations[index]!;
  candidates.declarations[index] = Object.freeze(Object.assign(Object.create(Object.getPrototypeOf(old) as object) as object, old, change)) as Declaration;
}

/** The handler cel-js (or a library) declared for the function overload `signature`, to wrap it. */
export function builtinHandler(env: Environment, probe: string, signature: string): Handler {
  const found = candidatesOf(env, probe, 'builtinHandler').declarations.find((d) => d.signature === signature);
  if (!found) throw new Error(`builtinHandler: no overload '${signature}'`);
  return found.handler;
}

/**
 * Replaces the handler of the function overload `signature` (as cel-js prints it, e.g.
 * `string.indexOf(string, int): int`); `probe` is an expression whose root calls it. cel-js refuses to
 * register a second overload with the same signature and offers no way to remove one, so the handler is
 * swapped in the environment's overload table (reached through the type-checked probe). Must run after
 * the environment's first `registerFunction` (which gives it its own table); nothing may be registered after.
 */
export function replaceBuiltin(env: Environment, probe: string, signature: string, handler: Handler): void {
  swap(candidatesOf(env, probe, 'replaceBuiltin'), signature, { handler }, 'replaceBuiltin');
  const after = candidatesOf(env, probe, 'replaceBuiltin').declarations.find((d) => d.signature === signature);
  if (after?.handler !== handler) throw new Error(`replaceBuiltin: cel-js internals changed (replacing '${signature}' did not take)`);
}

/**
 * Replaces the handlers of the operator overloads `handlers` (signature -> handler) among those
 * of `probe`'s root operator. The caller verifies by evaluating probes (an operator's table
 * caches what it found per operand types).
 */
export function replaceOperators(env: Environment, probe: string, handlers: Record<string, Handler>): void {
  const candidates = candidatesOf(env, probe, 'replaceOperators');
  if (typeof candidates.add !== 'function') throw new Error(`replaceOperators: cel-js internals changed (no operator candidates for '${probe}')`);
  for (const [signature, handler] of Object.entries(handlers)) swap(candidates, signature, { handler }, 'replaceOperators');
  clearCache(candidates);
}

/**
 * Gives the operator overload `signature` (among `probe`'s root operator's) the return type of
 * the overload `like`: cel-js declares some with the wrong one (`duration + timestamp` is a
 * duration to its checker). The caller verifies by type-checking a probe.
 */
export function retypeOperator(env: Environment, probe: string, signature: string, like: string): void {
  const candidates = candidatesOf(env, probe, 'retypeOperator');
  const model = candidates.declarations.find((d) => d.signature === like);
  if (!model || typeof candidates.add !== 'function') throw new Error(`retypeOperator: cel-js internals changed (no overload '${like}')`);
  const returnType = model.returnType;
  swap(candidates, signature, { returnType, signature: signature.replace(/: [^:]+$/, `: ${String(returnType)}`) }, 'retypeOperator');
  clearCache(candidates);
}

/** The table caches the overload found per operand types: adding a declaration clears that cache. */
function clearCache(candidates: Candidates): void {
  const last = candidates.declarations[candidates.declarations.length - 1]!;
  candidates.add!(last);
  candidates.declarations.pop();
}
