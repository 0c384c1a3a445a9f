/**
 * Regular expressions with RE2 semantics (no backreferences or lookaround, linear time), through
 * re2js: CEL's `matches` (string.matches and matches(string, string)) and Kubernetes' regex
 * library (`find`, `findAll` with an optional count; apiserver pkg/cel/library/regex.go). Each
 * pattern is compiled once and cached, invalid patterns included; a literal pattern that does not
 * compile is refused at compile time, as the API server does.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import { celError } from '../celjs/values.ts';
import { replaceBuiltin } from '../celjs/overloads.ts';
import type { CallNode } from '../celjs/walk.ts';

/** Compiled patterns (or their syntax error) by source text; dropped oldest-first beyond the cap. */
const cache = new Map<string, RE2JS | Error>();
const CACHE_LIMIT = 1000;

/** The compiled pattern, or throws its RE2 syntax error ("error parsing regexp: ..."). */
export function compileRegex(pattern: string): RE2JS {
  let entry = cache.get(pattern);
  if (entry === undefined) {
    try {
      entry = RE2JS.compile(pattern);
    } catch (err) {
      entry = new Error(err instanceof Error ? err.message : String(err));
    }
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(pattern, entry);
  }
  if (entry instanceof Error) throw celError(entry.message);
  return entry;
}

/** The number of cached patterns (for tests). */
export function regexCacheSize(): number {
  return cache.size;
}

function matches(s: string, pattern: string): boolean {
  return compileRegex(pattern).test(s);
}

function illegal<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw celError(`Illegal regex: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function find(s: string, pattern: string): string {
  const re = illegal(() => compileRegex(pattern));
  return (re.re2().find(s) as string | null) ?? '';
}

function findAll(s: string, pattern: string, n: bigint = -1n): string[] {
  const re = illegal(() => compileRegex(pattern));
  if (n === 0n) return [];
  const limit = n < 0n || n > 2147483647n ? -1 : Number(n);
  return (re.re2().findAll(s, limit) as string[] | null) ?? [];
}

export function registerRegex(env: Environment): void {
  env.registerFunction('matches(string, string): bool', matches);
  env.registerFunction('string.find(string): string', find);
  env.registerFunction('string.findAll(string): list<string>', (s: string, p: string) => findAll(s, p));
  env.registerFunction('string.findAll(string, int): list<string>', findAll);
}

export function replaceRegexBuiltins(env: Environment): void {
  replaceBuiltin(env, '"".matches("")', 'string.matches(string): bool', matches);
}

/**
 * The API server's compile-time checks: cel-go's ValidateRegexLiterals (the first argument of any
 * `matches` call, when it is a literal: the pattern of `s.matches(p)`, but the *subject* of
 * `matches(s, p)`, as cel-go has it) and the regex optimisation of find/findAll, which compiles a
 * literal pattern when the program is built.
 */
export function validateRegexCall(call: CallNode): void {
  const first = call.args[0];
  if (call.name === 'matches' && typeof first?.literal === 'string') {
    try {
      compileRegex(first.literal);
    } catch {
      throw celError('invalid matches argument');
    }
  }
  if ((call.name === 'find' || call.name === 'findAll') && call.receiver) {
    const pattern = call.args[0]?.literal;
    if (typeof pattern === 'string') compileRegex(pattern);
  }
}
