/**
 * The cel-spec conformance suite (from @bufbuild/cel-spec) through the policy environment, for
 * the cases that need no protobuf messages: no container, no message types or enums in the
 * expression, bindings, type environment or expected value, no declared functions, and not
 * type-deduction-only. Each case is parsed, checked and run as engine/environment.ts' compile
 * does (cel-go's has(), && and ||). Prints the pass figure; every case not listed in
 * cel-conformance.known-failures.json must pass, and every listed case must still fail, so the
 * figure only goes up.
 *
 * The list is grouped by reason: each failure says why it is tolerated, either that Kubernetes'
 * CEL environment (apiserver pkg/cel/environment/base.go, Kubernetes 1.37) does not enable what it
 * tests, or why we answer otherwise and what a policy's author sees differently. After a fix,
 * regenerate the list with
 *   CEL_CONFORMANCE_WRITE=1 npm run test:unit
 * which keeps the reasons of the cases still failing, drops those passing, and lists new failures
 * under a reason marked UNEXPLAINED, which fails the test until each is moved under a reason. See
 * why the cases under a prefix fail with CEL_CONFORMANCE_SHOW=<prefix> (e.g. string_ext).
 */
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { tests as conformance } from '@bufbuild/cel-spec/testdata/conformance.js';
import type { Environment } from '@marcbachmann/cel-js';
import { newEnvironment, validateProgram } from '../../src/policy/engine/environment.ts';
import { compileProgram } from '../../src/policy/fast/compiler.ts';
import { shortcutFor } from '../../src/policy/fast/shortcut.ts';
import { verification } from '../support/compiled-differential.ts';
import { withCost } from '../../src/policy/cost/instrument.ts';
import { useCelGoLogic } from '../../src/policy/celjs/logic.ts';
import { parseExpression } from '../../src/policy/celjs/parse.ts';
import { UnsignedInt } from '@marcbachmann/cel-js/evaluator';

const KNOWN_FAILURES = new URL('./cel-conformance.known-failures.json', import.meta.url);
/** The reason regeneration gives failures it has not seen: the test fails until they are explained. */
const UNEXPLAINED = 'UNEXPLAINED: new failures; move each under a reason (why Kubernetes does not enable it, or why we answer otherwise)';

/** The known failures, grouped by why each is tolerated. */
type KnownFailures = { reason: string; cases: string[] }[];

function readKnown(): KnownFailures {
  return JSON.parse(readFileSync(KNOWN_FAILURES, 'utf8')) as KnownFailures;
}

/** The known failures for `failures`: the reasons of those still failing kept, new ones UNEXPLAINED. */
function regenerated(known: KnownFailures, failures: Iterable<string>): KnownFailures {
  const reasonOf = new Map(known.flatMap((g) => g.cases.map((c) => [c, g.reason] as const)));
  const groups = new Map<string, string[]>(known.map((g) => [g.reason, []]));
  for (const name of failures) {
    const reason = reasonOf.get(name) ?? UNEXPLAINED;
    if (!groups.has(reason)) groups.set(reason, []);
    groups.get(reason)!.push(name);
  }
  return [...groups].filter(([, cases]) => cases.length).map(([reason, cases]) => ({ reason, cases: cases.sort() }));
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Case {
  name: string;
  test: JsonObject;
}

function collect(suite: { name: string; suites?: unknown[]; tests?: { original: JsonObject }[] }, path: string[], out: Case[]): Case[] {
  for (const t of suite.tests ?? []) out.push({ name: [...path, String(t.original.name)].join('/'), test: t.original });
  for (const s of suite.suites ?? []) collect(s as typeof suite, [...path, (s as typeof suite).name], out);
  return out;
}

const PROTO = /TestAllTypes|google\.protobuf|cel\.expr|GlobalEnum|\bproto[23]\b|objectValue|enumValue/;

function needsProtobuf(t: JsonObject): boolean {
  if (t.container || t.checkOnly) return true;
  const env = (t.typeEnv ?? []) as JsonObject[];
  if (env.some((d) => d.function)) return true;
  return PROTO.test(String(t.expr)) || PROTO.test(JSON.stringify([t.value ?? null, t.bindings ?? null, t.typeEnv ?? null, t.typedResult ?? null]));
}

/** A conformance type (cel.expr.Type as JSON) as a cel-js type name. */
function typeOf(t: JsonObject | undefined): string {
  if (!t) return 'dyn';
  const primitive: Record<string, string> = { INT64: 'int', UINT64: 'uint', DOUBLE: 'double', STRING: 'string', BOOL: 'bool', BYTES: 'bytes' };
  if (typeof t.primitive === 'string') return primitive[t.primitive] ?? 'dyn';
  if (t.listType) return `list<${typeOf((t.listType as JsonObject).elemType as JsonObject)}>`;
  if (t.mapType) return `map<${typeOf((t.mapType as JsonObject).keyType as JsonObject)}, ${typeOf((t.mapType as JsonObject).valueType as JsonObject)}>`;
  if ('null' in t) return 'null';
  return 'dyn';
}

/** A conformance value (cel.expr.Value as JSON) as a cel-js runtime value. */
function valueOf(v: JsonObject): unknown {
  if ('int64Value' in v) return BigInt(v.int64Value as string);
  if ('uint64Value' in v) return new UnsignedInt(BigInt(v.uint64Value as string));
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('nullValue' in v) return null;
  if ('bytesValue' in v) return new Uint8Array(Buffer.from(v.bytesValue as string, 'base64'));
  if ('listValue' in v) return (((v.listValue as JsonObject).values ?? []) as JsonObject[]).map(valueOf);
  if ('mapValue' in v) {
    const entries = (((v.mapValue as JsonObject).entries ?? []) as JsonObject[]).map((e) => [valueOf(e.key as JsonObject), valueOf(e.value as JsonObject)] as const);
    return entries.every(([k]) => typeof k === 'string') ? Object.fromEntries(entries) : new Map(entries);
  }
  if ('typeValue' in v) return { typeName: v.typeValue };
  throw new Error(`unsupported value ${JSON.stringify(v)}`);
}

/** Strict CEL value identity: same type and value (NaN is NaN). */
function same(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'bigint' || typeof expected === 'string' || typeof expected === 'boolean' || expected === null) return expected === actual;
  if (typeof expected === 'number') return typeof actual === 'number' && (expected === actual || (Number.isNaN(expected) && Number.isNaN(actual)));
  if (expected instanceof UnsignedInt) return actual instanceof UnsignedInt && actual.value === expected.value;
  if (expected instanceof Uint8Array) return actual instanceof Uint8Array && Buffer.from(actual).equals(Buffer.from(expected));
  if (Array.isArray(expected)) {
    const list = Array.isArray(actual) ? actual : actual instanceof Set ? [...actual] : undefined;
    return !!list && list.length === expected.length && expected.every((e, i) => same(e, list[i]));
  }
  if (expected && typeof expected === 'object' && 'typeName' in expected) {
    const name = (actual as { name?: string } | null)?.name;
    const wanted = (expected as { typeName: string }).typeName;
    return actual?.constructor?.name === 'Type' && (name === wanted || (wanted === 'null_type' && name === 'null'));
  }
  const want = expected instanceof Map ? [...expected] : Object.entries(expected as object);
  if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const have = actual instanceof Map ? [...actual] : Object.entries(actual);
  return have.length === want.length && want.every(([k, v]) => have.some(([k2, v2]) => same(k, k2) && same(v, v2)));
}

const environments = new Map<string, Environment>();
function environmentFor(variables: Record<string, string>): Environment {
  const key = JSON.stringify(variables);
  let env = environments.get(key);
  if (!env) environments.set(key, (env = newEnvironment(variables)));
  return env;
}

/** Runs one case; returns undefined when it passes, else what went wrong. */
function run(t: JsonObject): string | undefined {
  const variables: Record<string, string> = {};
  for (const decl of (t.typeEnv ?? []) as JsonObject[]) variables[String(decl.name)] = typeOf((decl.ident as JsonObject | undefined)?.type as JsonObject | undefined);
  const bindings: Record<string, unknown> = {};
  for (const [name, binding] of Object.entries((t.bindings ?? {}) as Record<string, JsonObject>)) {
    variables[name] ??= 'dyn';
    bindings[name] = valueOf(binding.value as JsonObject);
  }
  const wantError = !!t.evalError;
  let actual: unknown;
  try {
    // as engine/environment.ts' compile: cel-go's has() and its && and ||
    const program = parseExpression(environmentFor(variables), String(t.expr));
    useCelGoLogic(program.ast);
    if (!t.disableCheck) {
      const checked = program.check();
      if (!checked.valid) throw checked.error;
      validateProgram(program);
    }
    actual = program(bindings);
  } catch (err) {
    return wantError ? undefined : `error: ${String((err as Error).message).split('\n')[0]}`;
  }
  if (wantError) return `expected an error, got ${String(actual)}`;
  const expectedJson = (t.value ?? (t.typedResult as JsonObject | undefined)?.result) as JsonObject | undefined;
  if (!expectedJson) return undefined;
  const expected = valueOf(expectedJson);
  return same(expected, actual) ? undefined : `expected ${JSON.stringify(expectedJson)}, got ${String(actual)}`;
}

describe('cel-spec conformance', function () {
  it('passes every case not listed as a known failure, and fails every listed one', function () {
    const cases = collect(conformance as never, [], []).filter((c) => !needsProtobuf(c.test));
    const failures = new Map<string, string>();
    for (const c of cases) {
      const problem = run(c.test);
      if (problem !== undefined) failures.set(c.name, problem);
    }
    console.log(`      cel-spec conformance: ${cases.length - failures.size}/${cases.length} passing`);
    if (process.env.CEL_CONFORMANCE_SHOW) for (const [name, problem] of failures) if (name.startsWith(process.env.CEL_CONFORMANCE_SHOW)) console.log(`${name}\n    ${cases.find((c) => c.name === name)!.test.expr}\n    ${problem}`);

    if (process.env.CEL_CONFORMANCE_WRITE) writeFileSync(KNOWN_FAILURES, `${JSON.stringify(regenerated(readKnown(), failures.keys()), null, 2)}\n`);
    const groups = readKnown();
    const known = new Set(groups.flatMap((g) => g.cases));
    const unexplained = groups.filter((g) => !g.reason.trim() || g.reason === UNEXPLAINED).flatMap((g) => g.cases);
    expect(unexplained, 'known failures without a reason').to.deep.equal([]);
    expect(groups.flatMap((g) => g.cases).length, 'cases listed twice').to.equal(known.size);
    const newFailures = [...failures].filter(([name]) => !known.has(name)).map(([name, problem]) => `${name}: ${problem}`);
    const nowPassing = [...known].filter((name) => !failures.has(name));
    expect(newFailures, 'cases that used to pass').to.deep.equal([]);
    expect(nowPassing, 'known failures that pass now: remove them from cel-conformance.known-failures.json').to.deep.equal([]);
  });
});

describe('cel-spec conformance, through the compiled shortcut', function () {
  // Most cases bind variables the shortcut does not read (it reads VAP's); those made of literals
  // and operators it covers are compiled, and each answer is checked against cel-js's, cost included.
  it('answers every case it compiles as cel-js does', function () {
    const cases = collect(conformance as never, [], []).filter((c) => !needsProtobuf(c.test) && !c.test.disableCheck);
    let compiled = 0;
    for (const { test } of cases) {
      let program: ReturnType<Environment['parse']>;
      try {
        program = environmentFor({}).parse(String(test.expr));
        if (!program.check().valid) continue;
        validateProgram(program);
      } catch {
        continue;
      }
      useCelGoLogic(program.ast);
      const run = withCost(program, shortcutFor);
      if (!compileProgram(program.ast)) continue;
      compiled++;
      try {
        run({});
      } catch {
        // an error is cel-js's own (the shortcut hands every error to it)
      }
    }
    console.log(`      compiled shortcut: ${compiled} of ${cases.length} conformance cases compiled`);
    expect(verification.on, 'test/support/verify-compiled.ts is loaded').to.equal(true);
    expect(verification.differences).to.deep.equal([]);
    expect(compiled).to.be.greaterThan(100);
  });
});
