/**
 * portcullis/sdk: the public handler API a team's handler module imports, re-exporting the very types
 * the built-in handlers use (one Handler interface, not a copy); a module's shape is in
 * docs/handler-modules.md. Holds no state and starts nothing (loading modules is src/handler-modules's). Only
 * erasable TypeScript and small pure helpers importing nothing else at run time belong here: modules
 * bundle them (esbuild).
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
