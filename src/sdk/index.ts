/**
 * portcullis/sdk: the public handler API, what a team's handler module imports
 * (`import { type Handler, deny } from 'portcullis/sdk'`). It re-exports the very types the
 * built-in handlers are written against (src/handlers/handler.ts, src/api/admission-review.ts): there is one
 * Handler interface, not a copy. It holds no state and starts nothing; what loads and runs a module
 * is src/custom's. Only erasable TypeScript and small pure helpers that import nothing else at run
 * time belong here (handlers/config.ts's reader is one): a module bundles them (esbuild).
 *
 * A module is an ES module that exports
 *   export const apiVersion = HANDLER_API_VERSION;   // the SDK version it was built against
 *   export const handlers: CustomHandler<any>[] = [...];
 * each handler named with a domain it owns (`acme.dev/UniqueIngressHost`), so that it can never
 * take a built-in's name.
 */
import type { Decision } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { Handler } from '../handlers/handler.ts';

export type { AdmissionRequest, Decision, GroupVersionKind, GroupVersionResource } from '../api/admission-review.ts';
export type { JsonPatchOperation } from '../api/types.ts';
export type { ClusterView, ConfigContext, Handler, LookupKind, ServedResource } from '../handlers/handler.ts';
/** The built-ins' config reader: unknown fields, types and ranges checked field by field, each problem under its field's name. */
export { ConfigReader, isPlainObject, type ConfigError } from '../handlers/config.ts';

/**
 * The handler API's version, MAJOR.MINOR. A module declares the version it was built against; the
 * operator loads it when the majors are equal and the module's minor is not newer than its own
 * (a module built for 1.0 loads in 1.1), and refuses it at start otherwise.
 */
export const HANDLER_API_VERSION = '1.0';

/** A handler of a module: the built-ins' Handler, whose sides may also answer with a Promise. */
export type CustomHandler<Config = Record<string, unknown>> = Handler<Config, Decision | Promise<Decision>>;

/** What a module exports (the operator reads these two names). */
export interface HandlerModule {
  apiVersion: string;
  handlers: CustomHandler<any>[];
}

/** Let the request through. */
export const allow = (): Decision => ({ allowed: true });

/** Refuse the request: HTTP `code` (403, 422, ...), a `reason` (Forbidden, Invalid, ...) and the message the user reads. */
export const deny = (code: number, reason: string, message: string): Decision => ({ allowed: false, code, reason, message });

/** Let the request through changed by JSON Patch operations (on a Mutating webhook). */
export const patch = (operations: JsonPatchOperation[]): Decision => (operations.length ? { allowed: true, patch: operations } : { allowed: true });

/** The same decision with warnings added (kubectl prints them). */
export const withWarnings = (decision: Decision, ...warnings: string[]): Decision => ({ ...decision, warnings: [...(decision.warnings ?? []), ...warnings] });

/** The same decision with audit annotations added (the API server's audit log records them under the webhook's name). */
export const withAuditAnnotations = (decision: Decision, annotations: Record<string, string>): Decision => ({
  ...decision,
  auditAnnotations: { ...decision.auditAnnotations, ...annotations },
});

/** A parseConfig for a handler that takes no configuration: any field given is refused, by name. */
export function noConfig(name: string): (config: Record<string, unknown>) => { config: Record<string, never>; errors: { field: string; message: string }[] } {
  return (config) => ({ config: {}, errors: Object.keys(config).map((field) => ({ field, message: `${name} takes no configuration` })) });
}
