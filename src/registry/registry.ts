/**
 * The suite registry: compiled suites by name, each swapped in whole so a request sees one
 * generation, never a mix. Compiles only when the generation changes.
 */
import { nativeEnforcementOff } from '../api/enforcement.ts';
import type { AdmissionSuite, ParamsRef } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import { compileSuite, NO_PARAMS, type CompileContext, type CompiledSuite, type CompiledWebhook, type ParamsSource } from './compile.ts';
import { EMPTY_VIEW, type ClusterView, type LookupKind } from '../handlers/handler.ts';

/** What changed: a suite compiled at a new generation, or one removed. */
export type RegistryChange = { suite: AdmissionSuite } | { removed: string };

export class SuiteRegistry {
  private readonly suites = new Map<string, CompiledSuite>();
  private readonly listeners: ((change: RegistryChange) => void)[] = [];
  /** Each suite as last synced, for a copy that starts after it was. */
  private readonly sources = new Map<string, AdmissionSuite>();
  /** The compiled suites' webhooks, in all (kept as they change: the endpoint asks on every new connection). */
  private webhooks = 0;
  /** What every suite is compiled against (see CompileContext), and what a copy elsewhere (the review worker) needs to answer alike. */
  readonly context: CompileContext & { view: ClusterView; params: ParamsSource };

  constructor(context: CompileContext = {}) {
    this.context = { ...context, view: context.view ?? EMPTY_VIEW, params: context.params ?? NO_PARAMS };
  }

  /** Brings the entry for `suite` up to its generation; returns the compiled suite. */
  sync(suite: AdmissionSuite): CompiledSuite {
    const current = this.suites.get(suite.metadata.name);
    if (current && current.generation === (suite.metadata.generation ?? 0)) return current;
    const compiled = compileSuite(suite, this.context);
    this.webhooks += compiled.webhooks.size - (current?.webhooks.size ?? 0);
    this.suites.set(compiled.name, compiled);
    this.sources.set(compiled.name, suite);
    for (const listener of this.listeners) listener({ suite });
    return compiled;
  }

  /**
   * What is wrong with `suite`, as sync would find it, without serving it or starting any watch
   * (the suite-validation webhook asks this of suites not yet stored).
   */
  validate(suite: AdmissionSuite): FieldError[] {
    const errors = compileSuite(suite, { view: this.context.view, operatorNamespace: this.context.operatorNamespace }).errors;
    // Only on apply: a stored suite asking for Native where it is off is served by its webhook (reconciler.ts), never left unregistered.
    return this.context.nativeEnforcement === false ? [...errors, ...nativeEnforcementOff(suite)] : errors;
  }

  remove(name: string): void {
    this.webhooks -= this.suites.get(name)?.webhooks.size ?? 0;
    this.suites.delete(name);
    this.sources.delete(name);
    for (const listener of this.listeners) listener({ removed: name });
  }

  /** Called with every suite now synced, then on every change, for copies of the registry elsewhere (the review worker, the admission thread); the returned function stops them. */
  subscribe(listener: (change: RegistryChange) => void): () => void {
    for (const suite of this.sources.values()) listener({ suite });
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /** The suite as last synced (compiled or not), by name. */
  source(name: string): AdmissionSuite | undefined {
    return this.sources.get(name);
  }

  get(name: string): CompiledSuite | undefined {
    return this.suites.get(name);
  }

  /** How many suites are served. */
  get size(): number {
    return this.suites.size;
  }

  /** How many webhooks the served suites have (the endpoint sizes the API server's connection allowance by it). */
  get webhookCount(): number {
    return this.webhooks;
  }

  /** The params a webhook names, as its suite says. */
  paramsOf(suite: string, webhook: string): ParamsRef | undefined {
    return this.sources.get(suite)?.spec.webhooks.find((w) => w.name === webhook)?.params;
  }

  /** The kinds the served suites' handlers look up: the shared lookup caches to keep. */
  lookups(): Set<LookupKind> {
    const kinds = new Set<LookupKind>();
    for (const suite of this.suites.values()) for (const webhook of suite.webhooks.values()) for (const kind of webhook.lookups) kinds.add(kind);
    return kinds;
  }

  webhook(suite: string, webhook: string): CompiledWebhook | undefined {
    return this.suites.get(suite)?.webhooks.get(webhook);
  }
}
